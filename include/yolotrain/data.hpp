#pragma once

/// The data part: data.yaml, scan/validate/cache, decoding, augmentations, the deterministic
/// loader and the synthetic shapes dataset.
#include "yolotrain/data/augment.hpp"
#include "yolotrain/data/class_folders.hpp"
#include "yolotrain/data/classify_transforms.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/masks.hpp"
#include "yolotrain/data/rng.hpp"
#include "yolotrain/data/segments.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/error.hpp"
