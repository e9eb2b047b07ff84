#include "yolotrain/plots/batch_plots.hpp"

#include <ATen/ATen.h>

#include "yolotrain/plots/plot_images.hpp"
#include "yolotrain/plots/plot_labels.hpp"

namespace yolotrain::plots {
namespace {

ImagesPlot labels_of(const data::Batch& b, const std::vector<std::string>& names, bool overlap_masks) {
  ImagesPlot p;
  if (b.masks.defined()) p.masks = b.masks.to(at::kCPU).clone();
  if (b.keypoints.defined()) p.keypoints = b.keypoints.to(at::kCPU).clone();
  p.overlap_masks = overlap_masks;
  p.images = b.img.detach().to(at::kCPU).clone();
  p.cls = b.cls.to(at::kCPU).clone();
  p.paths = b.im_file;
  p.names = names;
  if (b.cls.dim() == 1 && b.cls.scalar_type() == at::kLong) {  // a classification batch: each image's class
    p.batch_idx = at::arange(b.cls.size(0), at::kLong);
    return p;
  }
  p.batch_idx = b.batch_idx.to(at::kCPU).clone();
  p.bboxes = b.bboxes.to(at::kCPU).clone();
  return p;
}

// Ultralytics' output_to_target: one row per detection (image index, class, xywh, conf), drawn on
// the images of `labels` (their tensor is shared, not copied again).
ImagesPlot predictions_of(const ImagesPlot& labels, const std::vector<at::Tensor>& preds, std::int64_t max_det,
                          const std::vector<at::Tensor>& pred_masks, const std::vector<at::Tensor>& pred_keypoints,
                          bool rotated) {
  ImagesPlot p = labels;
  p.masks = at::Tensor();
  p.keypoints = at::Tensor();
  p.overlap_masks = false;
  std::vector<at::Tensor> idx, cls, boxes, confs, masks, keypoints;
  for (const auto& m : pred_masks) masks.push_back(m.to(at::kCPU).slice(0, 0, max_det).gt(0.5).to(at::kByte));
  if (!masks.empty()) p.masks = at::cat(masks);
  for (const auto& k : pred_keypoints) keypoints.push_back(k.to(at::kCPU, at::kFloat).slice(0, 0, max_det));
  if (!keypoints.empty()) p.keypoints = at::cat(keypoints);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const at::Tensor d = preds[i].detach().to(at::kCPU, at::kFloat).slice(0, 0, max_det);
    if (rotated) {  // OBB rows x y w h conf cls angle: xywhr
      boxes.push_back(at::cat({d.slice(1, 0, 4), d.slice(1, 6, 7)}, 1));
    } else {
      const at::Tensor xyxy = d.slice(1, 0, 4);
      const at::Tensor wh = xyxy.slice(1, 2, 4) - xyxy.slice(1, 0, 2);
      boxes.push_back(at::cat({xyxy.slice(1, 0, 2) + wh / 2, wh}, 1));
    }
    idx.push_back(at::full({d.size(0)}, static_cast<double>(i)));
    confs.push_back(d.select(1, 4));
    cls.push_back(d.select(1, 5));
  }
  p.batch_idx = idx.empty() ? at::zeros({0}) : at::cat(idx);
  p.cls = cls.empty() ? at::zeros({0}) : at::cat(cls);
  p.bboxes = boxes.empty() ? at::zeros({0, rotated ? 5 : 4}) : at::cat(boxes);
  p.confs = confs.empty() ? at::zeros({0}) : at::cat(confs);
  return p;
}

}  // namespace

void plot_training_labels(PlotWriter& writer, const data::Dataset& set, const std::filesystem::path& dir) {
  std::vector<data::Box> boxes;
  for (const auto& r : set.records) boxes.insert(boxes.end(), r.boxes.begin(), r.boxes.end());
  writer.submit(dir / "labels.jpg",
                [boxes = std::move(boxes), names = set.names] { return plot_labels(boxes, names); });
}

void plot_training_batch(PlotWriter& writer, const data::Batch& batch, const std::vector<std::string>& names,
                         const std::filesystem::path& dir, bool overlap_masks) {
  ImagesPlot p = labels_of(batch, names, overlap_masks);
  writer.submit(dir / ("train_batch" + std::to_string(batch.index) + ".jpg"),
                [p = std::move(p)] { return plot_images(p); });
}

void plot_validation_batch(PlotWriter& writer, const data::Batch& batch, const std::vector<at::Tensor>& preds,
                           const std::vector<std::string>& names, const std::filesystem::path& dir,
                           std::int64_t max_det, const std::vector<at::Tensor>& pred_masks, bool overlap_masks,
                           const std::vector<at::Tensor>& pred_keypoints) {
  const std::string stem = "val_batch" + std::to_string(batch.index);
  ImagesPlot labels = labels_of(batch, names, overlap_masks);
  const bool rotated = labels.bboxes.defined() && labels.bboxes.size(-1) == 5;  // an OBB batch's xywhr
  ImagesPlot predictions = predictions_of(labels, preds, max_det, pred_masks, pred_keypoints, rotated);
  writer.submit(dir / (stem + "_labels.jpg"), [p = std::move(labels)] { return plot_images(p); });
  writer.submit(dir / (stem + "_pred.jpg"), [p = std::move(predictions)] { return plot_images(p); });
}

void plot_classify_validation_batch(PlotWriter& writer, const data::Batch& batch, const at::Tensor& probs,
                                    const std::vector<std::string>& names, const std::filesystem::path& dir) {
  const std::string stem = "val_batch" + std::to_string(batch.index);
  ImagesPlot labels = labels_of(batch, names, false);
  ImagesPlot predictions = labels;  // ClassificationValidator.plot_predictions: argmax and its probability
  const at::Tensor p = probs.detach().to(at::kCPU, at::kFloat);
  predictions.cls = p.argmax(1);
  predictions.confs = std::get<0>(p.max(1));
  writer.submit(dir / (stem + "_labels.jpg"), [l = std::move(labels)] { return plot_images(l); });
  writer.submit(dir / (stem + "_pred.jpg"), [q = std::move(predictions)] { return plot_images(q); });
}

}  // namespace yolotrain::plots
