#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/plots/plot_writer.hpp"

namespace yolotrain::plots {

/// Queues `dir/labels.jpg`: plot_labels() of every box of `set`, as Ultralytics'
/// plot_training_labels. Copies the boxes.
void plot_training_labels(PlotWriter& writer, const data::Dataset& set, const std::filesystem::path& dir);

/// Queues `dir/train_batch<index>.jpg`: the augmented batch with its labels (and its masks when it
/// has them: index masks when `overlap_masks`; its keypoints), as Ultralytics' plot_training_samples. Copies what
/// it needs, so `batch` may change after the call.
void plot_training_batch(PlotWriter& writer, const data::Batch& batch, const std::vector<std::string>& names,
                         const std::filesystem::path& dir, bool overlap_masks = true);

/// Queues `dir/val_batch<index>_labels.jpg` (the labels) and `dir/val_batch<index>_pred.jpg`
/// (the predictions above conf 0.25 with "name conf"), as Ultralytics' plot_val_samples and
/// plot_predictions. `preds` are the batch's post-NMS rows per image (x1, y1, x2, y2, conf, cls)
/// in the batch images' pixels; at most `max_det` per image are drawn. A segmentation model's
/// pictures have the masks too: the batch's label masks (index masks when `overlap_masks`) and
/// `pred_masks`, per image [n, h, w] 0/1 in the predictions' order (empty: none); a pose model's
/// the keypoints: the batch's and `pred_keypoints`, per image [n, k, 2 | 3] in the batch images'
/// pixels, in the predictions' order (empty: none). An OBB batch (bboxes [N, 5]) is drawn rotated, its
/// predictions being rows x, y, w, h, conf, cls, angle.
void plot_validation_batch(PlotWriter& writer, const data::Batch& batch, const std::vector<at::Tensor>& preds,
                           const std::vector<std::string>& names, const std::filesystem::path& dir,
                           std::int64_t max_det = 300, const std::vector<at::Tensor>& pred_masks = {},
                           bool overlap_masks = true, const std::vector<at::Tensor>& pred_keypoints = {});

/// A classification batch's val_batch<index>_labels.jpg (each image's class) and _pred.jpg (its most
/// probable class with the probability, "name 0.9"), as ClassificationValidator's plot_val_samples
/// and plot_predictions; `probs` [B, nc].
void plot_classify_validation_batch(PlotWriter& writer, const data::Batch& batch, const at::Tensor& probs,
                                    const std::vector<std::string>& names, const std::filesystem::path& dir);

}  // namespace yolotrain::plots
