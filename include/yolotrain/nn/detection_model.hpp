#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/nn/classify.hpp"
#include "yolotrain/nn/detect.hpp"
#include "yolotrain/nn/layer_kind.hpp"

namespace yolotrain::nn {

/// Options of DetectionModel.
struct DetectionModelOptions {
  /// `model` is a model name ("yolov8n.yaml", resolved by resolve_model()) or a path to a YAML.
  /* implicit */ DetectionModelOptions(std::string model = "yolov8n.yaml") : model_(std::move(model)) {}
  /* implicit */ DetectionModelOptions(const char* model) : model_(model) {}
  /// Model name or YAML path.
  TORCH_ARG(std::string, model);
  /// Number of classes; unset keeps the YAML's nc.
  TORCH_ARG(std::optional<int64_t>, nc) = std::nullopt;
  /// Scale (n, s, m, l, x); empty takes it from the model name, else the YAML's first scale.
  TORCH_ARG(std::string, scale) = "";
  /// Input channels (used when the YAML has no `ch`).
  TORCH_ARG(int64_t, ch) = 3;
  /// Class names; empty means "0", "1", ... as Ultralytics does.
  TORCH_ARG(std::vector<std::string>, names) = {};
  /// Whose construction to follow: "8.4" (Ultralytics 8.4, the default: SPPF's cv1 without SiLU,
  /// C3k2 rows with attn, box biases 2.0, a channel count equal to nc scaled, the stride probe
  /// leaving BatchNorm's statistics alone) or "8.3" (8.0 to 8.3; "8.0" ... "8.2" say the same).
  /// A `.pt` file builds what it pickled, whatever this says (io::read_ultralytics_pt).
  TORCH_ARG(std::string, ultralytics) = "8.4";
  /// A pose model's keypoints, {n, 2 | 3}, replacing the YAML's `kpt_shape` (Ultralytics' PoseModel
  /// takes the dataset's: data_kpt_shape); empty keeps the YAML's.
  TORCH_ARG(std::vector<int64_t>, kpt_shape) = {};
};

/// A YOLO detection model (YOLOv8, YOLO11, YOLO26) built from a model YAML in Ultralytics' schema; the same network as
/// Ultralytics' DetectionModel, tensor for tensor (with a Segment head, its SegmentationModel:
/// yolov8n-seg.yaml, yolo11n-seg.yaml, yolo26n-seg.yaml; task() says which): the layers are the children `model.0` ...
/// `model.N`, so state-dict names, order, shapes and dtypes are Ultralytics' (see state_dict()).
/// Construction runs a probe forward of zeros(1, ch, 256, 256) to find the strides (8.3: in train
/// mode; 8.4: BatchNorm in eval mode), then Detect's bias_init() and BatchNorm eps 1e-3 / momentum
/// 0.03, as Ultralytics does.
class DetectionModelImpl : public torch::nn::Cloneable<DetectionModelImpl> {
 public:
  explicit DetectionModelImpl(const DetectionModelOptions& options = {});

  /// Builds the layers from the YAML, probes the strides and initialises (see the class comment).
  void reset() override;

  /// Raw head outputs of the one-to-many branch, one per level: [B, 4*reg_max + nc, H_i, W_i]
  /// (train and eval alike); a classification model's logits [B, nc], alone.
  std::vector<at::Tensor> forward(const at::Tensor& x);
  /// Both branches of the head (the one-to-one only for an end-to-end head: YOLO26); a
  /// classification model's logits alone (HeadOutputs::logits).
  HeadOutputs forward_heads(const at::Tensor& x);

  /// What Ultralytics' eval forward returns (Detect::inference): [B, 4 + nc, A], xywh boxes in
  /// input pixels and sigmoid class scores, for NMS; for an end-to-end head [B, min(300, A), 6] =
  /// x1 y1 x2 y2, score, class, which needs none; a classification model's class probabilities
  /// [B, nc] (softmax, Ultralytics' eval output). Uses the current mode (call eval() first).
  at::Tensor predict(const at::Tensor& x);

  /// Folds every Conv's BatchNorm into its convolution for inference (Ultralytics' fuse()).
  /// The state dict then has `conv.bias` and no `bn.*` entries. Idempotent.
  void fuse();

  /// True once fuse() ran.
  bool fused() const { return fused_; }

  /// Strides of the detection levels ([8, 16, 32] for YOLOv8 and YOLO11).
  const std::vector<double>& strides() const { return strides_; }
  /// What every input size is a multiple of: the largest stride, at least 32 (Ultralytics' grid
  /// size gs = max(int(model.stride.max()), 32), used to round imgsz in train, val, predict and
  /// export).
  int64_t max_stride() const;
  /// Number of classes.
  int64_t nc() const { return nc_; }
  /// Ultralytics' task name, from the head: "classify" (a Classify head), "segment" (a Segment
  /// head), "pose" (a Pose head), "obb" (an OBB head) or "detect".
  std::string task() const {
    if (classifier()) return "classify";
    return head()->segments() ? "segment" : head()->keypoints() ? "pose" : head()->rotated() ? "obb" : "detect";
  }
  /// Class names (from the options, else "0" ... "nc-1").
  std::vector<std::string> names() const;
  /// Ultralytics 8.4's `model.class_weights` (DetectionTrainer.set_class_weights, `cls_pw`): the
  /// class term's weight per class, [nc], read by a loss built from this model afterwards
  /// (loss::DetectionLossOptions::of); undefined (the default): every class weighs 1.
  const at::Tensor& class_weights() const { return class_weights_; }
  void set_class_weights(at::Tensor weights) { class_weights_ = std::move(weights); }
  /// The scale used ("n", "s", ...; empty when the YAML has no scales).
  const std::string& scale() const { return scale_; }
  /// The model YAML the model was built from.
  const std::filesystem::path& yaml_path() const { return yaml_path_; }
  /// The detection head (the last layer); an Error for a classification model.
  Detect head() const;
  /// A classification model's Classify head (the last layer); empty (null) for the others.
  Classify classifier() const;
  /// The kind of layer `i` (its YAML module name and what the builder knows about it).
  const LayerKind& layer_kind(size_t i) const;
  /// The layers that layer `i` reads, as the YAML's `from` made absolute (-1 = the input image).
  const std::vector<int64_t>& layer_inputs(size_t i) const;

  /// The options the model was built with.
  DetectionModelOptions options;
  /// The layers, `model.0` ... `model.N`.
  torch::nn::ModuleList model{nullptr};

 private:
  struct Layer {
    const LayerKind* kind;
    std::vector<int64_t> from;  ///< absolute indices, -1 = the input image
    bool keep = false;          ///< a later layer reads this output
  };
  void build();
  void probe_and_initialise();
  /// The inputs of the head: the outputs of the layers it reads.
  std::vector<at::Tensor> head_inputs(const at::Tensor& x);
  /// In training: every BatchNorm's num_batches_tracked + 1, in one operator (its Convs leave it
  /// to the model: ConvImpl::counts_batches).
  void count_batch();

  std::vector<Layer> layers_;
  std::vector<double> strides_;
  std::filesystem::path yaml_path_;
  std::string scale_;
  int64_t nc_ = 0;
  bool fused_ = false;
  at::Tensor class_weights_;
};
TORCH_MODULE(DetectionModel);

/// `imgsz` rounded up to a multiple of `stride` (Ultralytics' check_imgsz; stride: max_stride()).
int64_t check_imgsz(int64_t imgsz, int64_t stride);

}  // namespace yolotrain::nn
