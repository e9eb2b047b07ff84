# yaml-cpp under one target name, YolotrainYamlCpp::yaml-cpp, from yaml-cpp's own CMake config: up
# to 0.7 (Debian 12) that config names its target `yaml-cpp`, from 0.8 (Debian 13) only
# `yaml-cpp::yaml-cpp`, and a bare `yaml-cpp` there becomes `-lyaml-cpp`, which links only where
# the library sits in the linker's own folders (not a yaml-cpp in a prefix: scripts/gpu/).
# Defines YolotrainYamlCpp_FOUND and the imported target YolotrainYamlCpp::yaml-cpp.
find_package(yaml-cpp CONFIG QUIET)
if(TARGET yaml-cpp::yaml-cpp)
  set(_yolotrain_yaml_cpp yaml-cpp::yaml-cpp)
elseif(TARGET yaml-cpp)
  set(_yolotrain_yaml_cpp yaml-cpp)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(YolotrainYamlCpp REQUIRED_VARS _yolotrain_yaml_cpp)

if(YolotrainYamlCpp_FOUND AND NOT TARGET YolotrainYamlCpp::yaml-cpp)
  add_library(YolotrainYamlCpp::yaml-cpp INTERFACE IMPORTED)
  set_target_properties(YolotrainYamlCpp::yaml-cpp PROPERTIES INTERFACE_LINK_LIBRARIES ${_yolotrain_yaml_cpp})
endif()
unset(_yolotrain_yaml_cpp)
