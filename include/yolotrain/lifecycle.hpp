#pragma once

/// The lifecycle core: everything a libtorch training loop needs to stop, pause, checkpoint and
/// resume gracefully. It knows nothing about YOLO.
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/atomic_file.hpp"
#include "yolotrain/lifecycle/checkpoint_store.hpp"
#include "yolotrain/lifecycle/control_token.hpp"
#include "yolotrain/lifecycle/cuda_guard.hpp"
#include "yolotrain/lifecycle/folder_lock.hpp"
#include "yolotrain/lifecycle/host_memory.hpp"
#include "yolotrain/lifecycle/pause.hpp"
#include "yolotrain/lifecycle/run_status.hpp"
#include "yolotrain/lifecycle/safetensors.hpp"
#include "yolotrain/lifecycle/sha256.hpp"
#include "yolotrain/lifecycle/signal_binding.hpp"
#include "yolotrain/version.hpp"
