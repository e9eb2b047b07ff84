# Finds OpenCV's core and imgproc modules without OpenCV's CMake config, which Debian ships only in
# libopencv-dev (that package depends on every OpenCV module). find_path/find_library honour
# CMAKE_PREFIX_PATH, so another OpenCV can be chosen with -DCMAKE_PREFIX_PATH=<prefix>.
# Defines YolotrainOpenCV_FOUND and the imported targets YolotrainOpenCV::core and
# YolotrainOpenCV::imgproc.
find_path(YolotrainOpenCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4)
find_library(YolotrainOpenCV_CORE_LIBRARY opencv_core)
find_library(YolotrainOpenCV_IMGPROC_LIBRARY opencv_imgproc)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(YolotrainOpenCV
  REQUIRED_VARS YolotrainOpenCV_CORE_LIBRARY YolotrainOpenCV_IMGPROC_LIBRARY YolotrainOpenCV_INCLUDE_DIR)
mark_as_advanced(YolotrainOpenCV_INCLUDE_DIR YolotrainOpenCV_CORE_LIBRARY YolotrainOpenCV_IMGPROC_LIBRARY)

if(YolotrainOpenCV_FOUND AND NOT TARGET YolotrainOpenCV::core)
  add_library(YolotrainOpenCV::core UNKNOWN IMPORTED)
  set_target_properties(YolotrainOpenCV::core PROPERTIES
    IMPORTED_LOCATION "${YolotrainOpenCV_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${YolotrainOpenCV_INCLUDE_DIR}")
  add_library(YolotrainOpenCV::imgproc UNKNOWN IMPORTED)
  set_target_properties(YolotrainOpenCV::imgproc PROPERTIES
    IMPORTED_LOCATION "${YolotrainOpenCV_IMGPROC_LIBRARY}"
    INTERFACE_LINK_LIBRARIES YolotrainOpenCV::core)
endif()
