#pragma once

/// Everything yolotrain offers. For now, the lifecycle core; the YOLO parts join it later.
#include "yolotrain/lifecycle.hpp"
