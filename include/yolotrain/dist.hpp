#pragma once

/// The dist part: multi-process training on c10d (torchrun's environment, a Gloo or NCCL
/// process group, bucketed gradient averaging, the per-step stop/pause consensus, a watchdog).
#include "yolotrain/dist/dist_env.hpp"
#include "yolotrain/dist/process_group.hpp"
#include "yolotrain/dist/requests.hpp"
#include "yolotrain/dist/watchdog.hpp"
#include "yolotrain/error.hpp"
