#include "yolotrain/yolotrain.hpp"

namespace yolotrain {

const char* version() noexcept { return YOLOTRAIN_VERSION_STRING; }

}  // namespace yolotrain
