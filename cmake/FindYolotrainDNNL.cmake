# Finds oneDNN (the library Debian's libtorch runs its CPU convolutions with; the Predictor's CPU
# forward calls it directly) by <oneapi/dnnl/dnnl.hpp> and libdnnl, without Debian's dnnl config,
# which requires OpenCL because the package is built with oneDNN's GPU runtime.
# Defines YolotrainDNNL_FOUND and the imported target YolotrainDNNL::dnnl.
include(${CMAKE_CURRENT_LIST_DIR}/YolotrainFindLibrary.cmake)
yolotrain_find_library(YolotrainDNNL TARGET YolotrainDNNL::dnnl HEADER oneapi/dnnl/dnnl.hpp LIBRARY dnnl)
