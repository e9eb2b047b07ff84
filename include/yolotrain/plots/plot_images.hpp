#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::plots {

/// What plot_images() draws: a batch and its boxes, as Ultralytics' plot_images takes them.
struct ImagesPlot {
  at::Tensor images;     ///< [B, 3, H, W] RGB, float 0..1 or uint8
  at::Tensor batch_idx;  ///< [N] the image of each box
  at::Tensor cls;        ///< [N] (or [N, 1]) class indices
  /// [N, 4] xywh (or [N, 5] xywhr, oriented boxes, drawn as their corners' polygon): normalised (all
  /// <= 1.1) or in pixels of the batch images; undefined with classes:
  /// a classification batch, each image's class written at its tile's top-left corner.
  at::Tensor bboxes;
  at::Tensor confs;      ///< [N] confidences of predictions; undefined for labels
  /// Instance masks at any resolution (resized to each tile): [B, h, w] index masks when
  /// `overlap_masks` (pixel k = the image's k-th box, 1-based, 0 background), else [N, h, w] 0/1,
  /// one per box; undefined: none.
  at::Tensor masks;
  bool overlap_masks = false;
  /// Keypoints of each box, [N, k, 2 | 3]: normalised (an image's all <= 1.01) or in pixels of the
  /// batch images; undefined: none.
  at::Tensor keypoints;
  std::vector<std::string> paths;  ///< each image's file (its name is written in the tile)
  std::vector<std::string> names;  ///< class names by index
  int max_size = 1920;             ///< the mosaic's longest side at most
  int max_subplots = 16;           ///< images drawn at most
  double conf_thres = 0.25;        ///< predictions drawn above this
};

/// Ultralytics' plot_images (utils/plotting.py): up to 16 images in a square grid filled column
/// by column on white, scaled so the mosaic's side is at most max_size, a white border and the
/// file name on each tile, every label box with its class name (predictions above conf_thres with
/// "name 0.8"), in the class palette of class_color() (box_label.hpp), each drawn box's keypoints
/// (draw_keypoints(): radius the line width, those under conf_thres left out), then each drawn
/// box's mask blended over its tile (0.4 image + 0.6 class colour). Returns the mosaic (BGR). Text is
/// OpenCV's Hershey font, where Ultralytics draws with PIL and Arial.
data::Image plot_images(const ImagesPlot& plot);

}  // namespace yolotrain::plots
