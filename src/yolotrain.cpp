// yolotrain::yolotrain's own source: the umbrella header, compiled once here so that every public
// header is known to compile on its own and together (the parts add their sources to this target
// from their CMakeLists.txt; version() is in the lifecycle core, which every program links).
#include "yolotrain/yolotrain.hpp"
