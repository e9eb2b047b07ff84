// yolotrain::version(), in the library every program links (the lifecycle core).
#include "yolotrain/version.hpp"

namespace yolotrain {

const char* version() noexcept { return YOLOTRAIN_VERSION_STRING; }

}  // namespace yolotrain
