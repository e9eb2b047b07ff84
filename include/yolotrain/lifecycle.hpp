#pragma once

/// The lifecycle core: everything a libtorch training loop needs to stop, pause, checkpoint and
/// resume gracefully. It knows nothing about YOLO.
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/lifecycle/control/job_control.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "yolotrain/lifecycle/files/folder_lock.hpp"
#include "yolotrain/lifecycle/memory/host_memory.hpp"
#include "yolotrain/lifecycle/control/pause.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"
#include "yolotrain/lifecycle/files/safetensors.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"
#include "yolotrain/version.hpp"
