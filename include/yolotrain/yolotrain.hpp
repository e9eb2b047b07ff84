#pragma once

/// Everything yolotrain offers: the lifecycle core and every YOLO part. Each part's header
/// (yolotrain/<part>.hpp) can also be included alone; this one is for programs that want all.
#include "yolotrain/data.hpp"
#include "yolotrain/dist.hpp"
#include "yolotrain/engine.hpp"
#include "yolotrain/export.hpp"
#include "yolotrain/io.hpp"
#include "yolotrain/lifecycle.hpp"
#include "yolotrain/loss.hpp"
#include "yolotrain/metrics.hpp"
#include "yolotrain/nn.hpp"
#include "yolotrain/plots.hpp"
#include "yolotrain/predict.hpp"
#include "yolotrain/endpoint.hpp"
#include "yolotrain/remote.hpp"
#include "yolotrain/version.hpp"
