#pragma once
// Classification datasets in Ultralytics' layout (its check_cls_dataset and ClassificationDataset,
// torchvision's ImageFolder): a folder per split, a folder per class inside, the images in those.
#include <filesystem>
#include <string>

#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/dataset.hpp"

namespace yolotrain::data {

/// True when `path` is a folder holding a `train` folder (a classification dataset's root).
bool is_class_folders(const std::filesystem::path& path);

/// A classification dataset's config (DataConfig::classify): `root`/train, and `root`/val, else
/// `root`/validation, else `root`/test, as Ultralytics picks its validation split; class names are
/// train's class folders, sorted by name (Ultralytics' and ImageFolder's order). Throws
/// yolotrain::Error naming what is missing: no such folder, no train folder, no class folder.
DataConfig load_class_folders(const std::filesystem::path& root);

/// A dataset's config from `data`: a folder is a classification dataset (load_class_folders), a
/// file a data.yaml (load_data_yaml), as Ultralytics tells its classify datasets from the others.
DataConfig load_dataset_config(const std::filesystem::path& data);

/// The images of `split` ("train", "val", "test") of a classification dataset, sorted by class then
/// path, each with its class (ImageRecord::category). Images are checked as for detection (header,
/// size, EXIF); bad ones are skipped, one Problem each. An image outside any class folder, or a
/// split's class folder that train does not have, is an Error naming it (its class index would
/// differ from the model's).
Dataset load_class_split(const DataConfig& config, const std::string& split, const ScanOptions& options = {});

}  // namespace yolotrain::data
