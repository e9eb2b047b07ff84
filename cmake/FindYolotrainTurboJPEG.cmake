# Finds libjpeg-turbo's TurboJPEG API (<turbojpeg.h>, libturbojpeg: Debian's libturbojpeg0-dev)
# without libjpeg-turbo's CMake config, whose imported targets reference the static libjpeg.a of
# another package (libjpeg62-turbo-dev) that yolotrain does not use.
# Defines YolotrainTurboJPEG_FOUND and the imported target YolotrainTurboJPEG::turbojpeg.
include(${CMAKE_CURRENT_LIST_DIR}/YolotrainFindLibrary.cmake)
yolotrain_find_library(YolotrainTurboJPEG TARGET YolotrainTurboJPEG::turbojpeg HEADER turbojpeg.h
  LIBRARY turbojpeg)
