# Finds GNU libmicrohttpd (the control endpoint's HTTP server, yolotrain::endpoint) by
# <microhttpd.h> and libmicrohttpd: Debian ships a pkg-config file but no CMake config.
# Defines YolotrainMicroHttpd_FOUND and the imported target YolotrainMicroHttpd::microhttpd.
include(${CMAKE_CURRENT_LIST_DIR}/YolotrainFindLibrary.cmake)
yolotrain_find_library(YolotrainMicroHttpd TARGET YolotrainMicroHttpd::microhttpd HEADER microhttpd.h
                       LIBRARY microhttpd)
