#pragma once

// What the ONNX export tests share: the models (random or trained, fused), real images as
// network input, and the predictor's NMS.

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/predict/preprocess.hpp"

namespace yolotrain::test::export_support {
namespace fs = std::filesystem;

inline const fs::path kShared(YOLOTRAIN_SHARED_DIR);
inline const fs::path kBest = kShared / "weights" / "ultralytics" / "bccd_yolov8n" / "best.pt";

inline const fs::path kYolo11Best = kShared / "weights" / "ultralytics" / "bccd_yolo11n" / "best.pt";

// A model (yolov8n unless named) with nc classes and seeded random weights, fused for inference.
inline yolotrain::nn::DetectionModel random_model(std::int64_t nc, const std::string& yaml = "yolov8n.yaml") {
  at::manual_seed(0);
  yolotrain::nn::DetectionModel m(yolotrain::nn::DetectionModelOptions(yaml).nc(nc));
  m->eval();
  m->fuse();
  return m;
}

inline yolotrain::nn::DetectionModel model_of(const fs::path& weights) {
  auto m = yolotrain::io::build_model(yolotrain::io::read_model_weights(weights), weights.string());
  m->eval();
  m->fuse();
  return m;
}

// The first `n` images of a dataset's val folder (sorted), decoded.
inline std::vector<yolotrain::data::Image> images_of(const std::string& dataset, std::size_t n) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(kShared / "datasets" / dataset / "images" / "val"))
    paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<yolotrain::data::Image> out;
  for (std::size_t i = 0; i < n && i < paths.size(); ++i) out.push_back(yolotrain::data::decode_image(paths[i]));
  return out;
}

// Network input from real images, letterboxed to the full h x w (as for a static graph).
inline at::Tensor input_of(const std::vector<yolotrain::data::Image>& images, std::int64_t h, std::int64_t w) {
  std::vector<const yolotrain::data::Image*> ptrs;
  for (const auto& im : images) ptrs.push_back(&im);
  return yolotrain::predict::preprocess(ptrs, h, w, false).to(at::kFloat).div_(255);
}

inline std::vector<at::Tensor> detections(const at::Tensor& out) {
  yolotrain::metrics::NmsOptions o;  // the predictor's: conf 0.25, iou 0.7, no multi-label
  o.conf = 0.25;
  o.iou = 0.7;
  return yolotrain::metrics::non_max_suppression(out, o);
}

/// How another runtime's output `got` compares with libtorch's `expected` ([B, 4 + nc, A]).
struct Agreement {
  double diff = 0, range = 0;   ///< max |got - expected| and the range of expected
  bool same_detections = true;  ///< the same number of boxes per image, classes equal, corners within 0.01 px
  std::size_t boxes = 0;        ///< detections compared
};

inline Agreement compare(const at::Tensor& expected, const at::Tensor& got) {
  Agreement a;
  if (got.sizes() != expected.sizes()) return {1e30, 0, false, 0};
  a.range = (expected.max() - expected.min()).item<double>();
  a.diff = (got - expected).abs().max().item<double>();
  const auto want = detections(expected), have = detections(got);
  for (std::size_t b = 0; b < want.size(); ++b) {
    if (have[b].size(0) != want[b].size(0)) return a.same_detections = false, a;
    if (want[b].size(0) == 0) continue;
    a.same_detections = a.same_detections && at::equal(have[b].select(1, 5), want[b].select(1, 5)) &&
                        (have[b].slice(1, 0, 4) - want[b].slice(1, 0, 4)).abs().max().item<double>() < 1e-2;
    a.boxes += static_cast<std::size_t>(want[b].size(0));
  }
  return a;
}

// max |got - want| and want's range, over the part of axis `axis` from `begin` to `end`.
inline std::pair<double, double> part_diff(const at::Tensor& want, const at::Tensor& got, int64_t axis, int64_t begin,
                                           int64_t end) {
  const at::Tensor w = want.slice(axis, begin, end), g = got.slice(axis, begin, end);
  return {(g - w).abs().max().item<double>(), (w.max() - w.min()).item<double>()};
}

// An end-to-end head's top-k rows [B, k, 6 + extra] (YOLO26-seg's coefficients, -pose's keypoints):
// rows of `want` without a row of `got` that has its box (within box_tol), score (1e-4), class and
// extra columns (within coef_tol). Equal scores may come
// out of TopK in either order, so rows are matched, not compared by position; and the rows that tie
// with the k-th score (random weights give hundreds of equal scores) may be other anchors in each
// runtime, so rows at the lowest score are left out.
inline std::size_t unmatched_topk_rows(const at::Tensor& want, const at::Tensor& got, double box_tol,
                                       double coef_tol, std::size_t* compared = nullptr) {
  std::size_t missing = 0;
  for (int64_t b = 0; b < want.size(0); ++b) {
    const double lowest = want[b].select(1, 4).min().item<double>();
    for (int64_t i = 0; i < want.size(1); ++i) {
      const at::Tensor row = want[b][i];
      if (row[4].item<double>() <= lowest + 1e-6) continue;
      if (compared) ++*compared;
      const at::Tensor close = ((got[b].slice(1, 0, 4) - row.slice(0, 0, 4)).abs().amax(1) <= box_tol) &
                               ((got[b].select(1, 4) - row[4]).abs() <= 1e-4) & (got[b].select(1, 5) == row[5]) &
                               ((got[b].slice(1, 6) - row.slice(0, 6)).abs().amax(1) <= coef_tol);
      if (!close.any().item<bool>()) ++missing;
    }
  }
  return missing;
}

}  // namespace yolotrain::test::export_support
