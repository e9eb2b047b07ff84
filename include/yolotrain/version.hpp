#pragma once

/// yolotrain's version; CMake reads these three lines to version the package.
#define YOLOTRAIN_VERSION_MAJOR 0
#define YOLOTRAIN_VERSION_MINOR 1
#define YOLOTRAIN_VERSION_PATCH 0

#define YOLOTRAIN_STRINGIFY_(x) #x
#define YOLOTRAIN_STRINGIFY(x) YOLOTRAIN_STRINGIFY_(x)
/// "MAJOR.MINOR.PATCH"
#define YOLOTRAIN_VERSION_STRING                                                   \
  YOLOTRAIN_STRINGIFY(YOLOTRAIN_VERSION_MAJOR)                                     \
  "." YOLOTRAIN_STRINGIFY(YOLOTRAIN_VERSION_MINOR) "." YOLOTRAIN_STRINGIFY(        \
      YOLOTRAIN_VERSION_PATCH)

namespace yolotrain {
/// The version of the library the program runs with ("MAJOR.MINOR.PATCH").
const char* version() noexcept;
}  // namespace yolotrain
