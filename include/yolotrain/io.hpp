#pragma once

/// yolotrain::io — weights files beside safetensors: Ultralytics .pt read without Python (a
/// torch.save zip and a data-only pickle reader), and one reader for every weights file.
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/io/pickle.hpp"
#include "yolotrain/io/torch_archive.hpp"
#include "yolotrain/io/ultralytics_pt.hpp"
