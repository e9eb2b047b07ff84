# yolotrain_find_library(<Package> TARGET <ns::name> HEADER <file> LIBRARY <name>
#                        [PATH_SUFFIXES <dirs...>])
# Finds a C/C++ library by its header and its library file, without the package's own CMake
# config, and defines the imported target <ns::name>. Used where Debian's config asks for more than
# yolotrain uses: dnnl's requires OpenCL (its GPU runtime), libjpeg-turbo's references the static
# libjpeg.a of another package. find_path/find_library honour CMAKE_PREFIX_PATH, so another copy
# of the library can be chosen with -DCMAKE_PREFIX_PATH=<prefix>. A macro: the Find module calling
# it runs in the scope of find_package, where <Package>_FOUND must be set.
include(FindPackageHandleStandardArgs)
macro(yolotrain_find_library _yt_pkg)
  cmake_parse_arguments(_yt_fl "" "TARGET;HEADER;LIBRARY" "PATH_SUFFIXES" ${ARGN})
  find_path(${_yt_pkg}_INCLUDE_DIR ${_yt_fl_HEADER} PATH_SUFFIXES ${_yt_fl_PATH_SUFFIXES})
  find_library(${_yt_pkg}_LIBRARY ${_yt_fl_LIBRARY})
  find_package_handle_standard_args(${_yt_pkg} REQUIRED_VARS ${_yt_pkg}_LIBRARY ${_yt_pkg}_INCLUDE_DIR)
  mark_as_advanced(${_yt_pkg}_INCLUDE_DIR ${_yt_pkg}_LIBRARY)
  if(${_yt_pkg}_FOUND AND NOT TARGET ${_yt_fl_TARGET})
    add_library(${_yt_fl_TARGET} UNKNOWN IMPORTED)
    set_target_properties(${_yt_fl_TARGET} PROPERTIES
      IMPORTED_LOCATION "${${_yt_pkg}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${${_yt_pkg}_INCLUDE_DIR}")
  endif()
endmacro()
