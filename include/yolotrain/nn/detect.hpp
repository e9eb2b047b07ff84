#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "yolotrain/nn/anchors.hpp"
#include "yolotrain/nn/block.hpp"
#include "yolotrain/nn/proto.hpp"
#include "yolotrain/nn/realnvp.hpp"

namespace yolotrain::nn {

/// Options of Detect: the decoupled YOLOv8 head over `ch.size()` feature levels.
struct DetectOptions {
  DetectOptions(int64_t nc, std::vector<int64_t> ch) : nc_(nc), ch_(std::move(ch)) {}
  /// Number of classes.
  TORCH_ARG(int64_t, nc);
  /// Input channels of each level (P3, P4, P5 for YOLOv8).
  TORCH_ARG(std::vector<int64_t>, ch);
  /// DFL bins per box side.
  TORCH_ARG(int64_t, reg_max) = 16;
  /// YOLOv8's class branch (true) or YOLO11's (false: DWConv 3x3 -> Conv 1x1, twice, then the
  /// 1x1 Conv2d). Ultralytics' parse_model sets it false when the model has a C3k2.
  TORCH_ARG(bool, legacy) = true;
  /// A second, one-to-one branch (`one2one_cv2`, `one2one_cv3`, copies of cv2 and cv3 at
  /// construction) whose top-k output needs no NMS: YOLO26 (Ultralytics 8.4's `end2end: True`).
  TORCH_ARG(bool, end2end) = false;
  /// Detections an end-to-end head keeps per image (Ultralytics' max_det, 300).
  TORCH_ARG(int64_t, max_det) = 300;
  /// bias_init()'s box bias: 2.0 since Ultralytics 8.4, 1.0 before.
  TORCH_ARG(double, box_bias) = 2.0;
  /// Mask coefficients per anchor: 0 for detection (Ultralytics' Detect); Ultralytics' Segment has
  /// nm (32), with a Proto making as many prototypes and a mask-coefficient branch `cv4`.
  TORCH_ARG(int64_t, nm) = 0;
  /// Hidden channels of the Proto (Ultralytics' npr, 256 scaled by the width).
  TORCH_ARG(int64_t, npr) = 256;
  /// YOLO26-seg's Segment26: its Proto is Proto26 (all levels, a semantic branch).
  TORCH_ARG(bool, proto26) = false;
  /// Keypoints per anchor, {n, 2 | 3}: Ultralytics' Pose (x y [visibility] per keypoint, a branch
  /// `cv4` of Conv3x3, Conv3x3, Conv2d 1x1 -> n * dims); empty for detection and segmentation.
  TORCH_ARG(std::vector<int64_t>, kpt_shape) = {};
  /// YOLO26-pose's Pose26: `cv4` is two Convs shared by `cv4_kpts` (-> n * dims) and `cv4_sigma`
  /// (-> 2n, each keypoint's x and y scale, trained through the RLE loss's `flow_model`).
  TORCH_ARG(bool, pose26) = false;
  /// Angle values per anchor: 0 except for Ultralytics' OBB (1: a branch `cv4` of Conv3x3, Conv3x3,
  /// Conv2d 1x1 -> ne; the box is then rotated by that angle, dist2rbox).
  TORCH_ARG(int64_t, ne) = 0;
  /// YOLO26-obb's OBB26: the angle is the branch's raw output (OBB: (sigmoid - 0.25) * pi).
  TORCH_ARG(bool, obb26) = false;
};

/// The raw outputs of both branches, per level [B, 4*reg_max + nc, H_i, W_i]; `one2one` is empty
/// unless the head is end-to-end (and that mode is on). A segmentation head adds each branch's
/// mask coefficients [B, nm, A] (anchors level by level, as the levels flatten), the prototypes
/// [B, nm, 2*H3, 2*W3] both branches share (Ultralytics' one-to-one loss reads them detached) and,
/// for YOLO26-seg in training, the semantic logits [B, nc, H3, W3]; all undefined for detection.
/// A pose head adds each branch's raw keypoints [B, n * dims, A] and, for YOLO26-pose in training,
/// their scales [B, 2n, A] (Pose26's kpts_sigma).
struct HeadOutputs {
  std::vector<at::Tensor> one2many;
  std::vector<at::Tensor> one2one;
  at::Tensor mask_coefficients;
  at::Tensor one2one_mask_coefficients;
  at::Tensor proto;
  at::Tensor semantic;
  at::Tensor keypoints;
  at::Tensor one2one_keypoints;
  at::Tensor keypoint_sigma;
  at::Tensor one2one_keypoint_sigma;
  /// An OBB head's angles in radians [B, ne, A] per branch (OBB: (sigmoid - 0.25) * pi, in
  /// [-pi/4, 3pi/4); OBB26: raw).
  at::Tensor angle;
  at::Tensor one2one_angle;
  /// A classification model's class logits [B, nc] (Classify's output in training); nothing else
  /// is set then.
  at::Tensor logits;
};

/// Ultralytics' Detect head. Children `cv2` (box branch per level: Conv3x3, Conv3x3, Conv2d 1x1 ->
/// 4*reg_max), `cv3` (class branch: Conv3x3, Conv3x3, Conv2d 1x1 -> nc; not legacy:
/// [DWConv3x3, Conv1x1], [DWConv3x3, Conv1x1], Conv2d 1x1 -> nc), `dfl` (none when reg_max is 1:
/// Ultralytics' nn.Identity) and, end-to-end, `one2one_cv2` / `one2one_cv3`.
/// With nm > 0 it is Ultralytics' Segment (Segment26 with proto26), which adds `proto` and `cv4`
/// (mask coefficients per level: Conv3x3, Conv3x3, Conv2d 1x1 -> nm) and, end-to-end,
/// `one2one_cv4`: one class, so that the trainer, EMA, exporters and predictor meet one head type.
class DetectImpl : public torch::nn::Cloneable<DetectImpl> {
 public:
  explicit DetectImpl(const DetectOptions& options);
  void reset() override;

  /// Raw per-level outputs of the one-to-many branch, cat(box 4*reg_max, cls nc) as
  /// [B, 4*reg_max+nc, H_i, W_i].
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& xs);
  /// Both branches; the one-to-one branch reads the features detached in training (Ultralytics:
  /// it stays out of the backbone's gradient).
  HeadOutputs forward_heads(const std::vector<at::Tensor>& xs);

  /// Decodes raw outputs into [B, 4+nc, A]: boxes in pixels (DFL expectation, dist2bbox, times
  /// the level stride; xywh, or xyxy when `xyxy`) and sigmoid class scores, anchors ordered level by
  /// level, row-major. Needs strides (set by DetectionModel's probe forward).
  at::Tensor decode(const std::vector<at::Tensor>& raw, bool xyxy = false);

  /// What Ultralytics' eval forward returns: end-to-end, [B, min(max_det, A), 6] = x1 y1 x2 y2,
  /// score, class from the one-to-one branch's top-k (Detect.postprocess); otherwise decode() of the
  /// one-to-many branch, [B, 4+nc, A], for NMS. A segmentation head appends the nm mask
  /// coefficients: [B, k, 6+nm] and [B, 4+nc+nm, A] (Segment._inference / postprocess); a pose head
  /// its decoded keypoints (pixels, sigmoid visibility): [B, k, 6+n*dims] and [B, 4+nc+n*dims, A]
  /// (Pose._inference, kpts_decode / postprocess); an OBB head gives rotated boxes (centre, size) and
  /// appends the angle: [B, k, 7] and [B, 4+nc+1, A] (OBB._inference / postprocess).
  at::Tensor inference(const HeadOutputs& heads);

  /// Ultralytics' bias_init() on every branch: box biases `box_bias`, class biases
  /// log(5 / nc / (640 / stride)^2).
  void bias_init();

  /// True when the head has the one-to-one branch and that mode is on (Ultralytics' `end2end`).
  bool end2end() const { return one2one_cv2 && end2end_on_; }
  /// Turns the end-to-end mode off (NMS over the one-to-many branch, Ultralytics' end2end=False) or
  /// back on; a head without the one-to-one branch stays off.
  void set_end2end(bool on) { end2end_on_ = on; }

  /// Outputs per anchor: 4*reg_max + nc.
  int64_t no() const { return options.nc() + 4 * options.reg_max(); }
  /// True for a segmentation head (nm > 0).
  bool segments() const { return options.nm() > 0; }
  /// True for a pose head (kpt_shape set).
  bool keypoints() const { return !options.kpt_shape().empty(); }
  /// True for an oriented-box head (Ultralytics' OBB: ne > 0).
  bool rotated() const { return options.ne() > 0; }
  /// Keypoint values per anchor, n * dims (0 without keypoints).
  int64_t nk() const { return keypoints() ? options.kpt_shape()[0] * options.kpt_shape()[1] : 0; }

  /// OBB's decode: raw outputs and their angles [B, ne, A] to [B, 4 + nc, A], rotated boxes (centre
  /// x, centre y, width, height in pixels; dist2rbox of the DFL distances) and sigmoid class scores.
  at::Tensor decode_rotated(const std::vector<at::Tensor>& raw, const at::Tensor& angle);

  /// Pose.kpts_decode / Pose26.kpts_decode: raw keypoints [B, n*dims, A] to pixels over the anchors
  /// of `raw` (the levels they came with); visibility through a sigmoid.
  at::Tensor decode_keypoints(const at::Tensor& keypoints, const std::vector<at::Tensor>& raw) const;

  DetectOptions options;
  /// Stride of each level (empty until set).
  std::vector<double> stride;
  torch::nn::ModuleList cv2{nullptr};
  torch::nn::ModuleList cv3{nullptr};
  DFL dfl{nullptr};
  torch::nn::ModuleList one2one_cv2{nullptr};
  torch::nn::ModuleList one2one_cv3{nullptr};
  /// Segmentation only (empty for detection).
  Proto proto{nullptr};
  torch::nn::ModuleList cv4{nullptr};
  torch::nn::ModuleList one2one_cv4{nullptr};
  /// YOLO26-pose only: the keypoint and scale outputs over cv4, and the RLE loss's flow.
  RealNVP flow_model{nullptr};
  torch::nn::ModuleList cv4_kpts{nullptr};
  torch::nn::ModuleList cv4_sigma{nullptr};
  torch::nn::ModuleList one2one_cv4_kpts{nullptr};
  torch::nn::ModuleList one2one_cv4_sigma{nullptr};

 private:
  /// The raw outputs' parts over all anchors: the box distances (through the DFL when reg_max > 1)
  /// [B, 4, A], the class logits [B, nc, A], the anchor points [1, 2, A] and strides [1, A].
  struct RawParts {
    at::Tensor distances, scores, anchors, strides;
  };
  RawParts split_raw(const std::vector<at::Tensor>& raw);
  void build_mask_branch();
  void build_pose_branch();
  void build_angle_branch();
  /// One branch's angles (OBB's transform applied; OBB26's raw).
  at::Tensor angle_outputs(bool one2one, const std::vector<at::Tensor>& xs);
  /// A branch list's per-level outputs, viewed [B, channels, H*W] and joined over the levels (a
  /// mask-coefficient or keypoint branch).
  at::Tensor per_anchor(const torch::nn::ModuleList& branch, const std::vector<at::Tensor>& xs, int64_t channels);
  /// One branch's raw keypoints (and, for Pose26 in training, their scales).
  void pose_outputs(bool one2one, const std::vector<at::Tensor>& xs, at::Tensor& keypoints, at::Tensor& sigma);
  std::vector<at::Tensor> run(const torch::nn::ModuleList& box, const torch::nn::ModuleList& cls,
                              const std::vector<at::Tensor>& xs);
  bool end2end_on_ = true;
};
TORCH_MODULE(Detect);

}  // namespace yolotrain::nn
