#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::predict {

/// Options of a Predictor: Ultralytics' predict arguments, with its defaults.
struct PredictOptions {
  std::int64_t imgsz_h = 640;   ///< network input height (rounded up to a multiple of the model's max stride, 32)
  std::int64_t imgsz_w = 640;   ///< network input width (rounded up likewise)
  double conf = 0.25;           ///< keep detections whose confidence is above this
  double iou = 0.7;             ///< NMS IoU threshold
  std::int64_t max_det = 300;   ///< at most this many detections per image
  std::optional<std::vector<std::int64_t>> classes;  ///< keep only these class indices
  bool agnostic_nms = false;    ///< NMS across classes
  /// An end-to-end head (YOLO26): its one-to-one top-k, no NMS (true), or the one-to-many branch
  /// with NMS (false; Ultralytics 8.4's end2end=False). Other heads ignore it.
  bool end2end = true;
  std::string device;           ///< "" (CUDA when usable), cpu, cuda, cuda:N, N
  bool half = false;            ///< float16 inference (CUDA only; ignored with a notice on the CPU)
  bool fuse = true;             ///< fold BatchNorm into the convolutions, as Ultralytics does
  /// The forward on the CPU (docs/predict.md, "Which forward runs on the CPU"): "auto", the one
  /// measured fastest for this CPU's instruction set; "onednn", the fused network run by oneDNN
  /// primitives directly, in the layout this CPU's convolutions prefer ("onednn-nchw16c",
  /// "onednn-nchw8c", "onednn-nhwc": in that one); a "-bf16" suffix ("onednn-bf16",
  /// "onednn-nchw16c-bf16"), in bfloat16 (opt-in, CPUs with AVX-512 BF16 or AMX; not
  /// Ultralytics-exact: docs/predict.md says by how much); "libtorch", the model's own
  /// forward. The oneDNN ones need fuse = true; a model or CPU they cannot run gets libtorch's
  /// forward (or float32 for bf16) and the Predictor says why. Predictor::forward() names the one
  /// that runs.
  std::string forward = "auto";
  /// Segmentation models: the masks computed at the original image's resolution (Ultralytics'
  /// retina_masks: process_mask_native) instead of at the network input's, then scaled.
  bool retina_masks = false;
};

/// One detected object, in the original image's pixels.
struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  ///< corners, clipped to the image
  float conf = 0;                        ///< confidence (class score after the sigmoid)
  std::int64_t cls = 0;                  ///< class index
  std::string name;                      ///< class name
  /// A segmentation model's mask of the object: 0/1 per pixel of the original image, row-major
  /// (orig_h x orig_w). Ultralytics' mask at the network input (process_mask, upsample=True),
  /// scaled to the image as its scale_masks does (> 0.5); with retina_masks, computed there
  /// (process_mask_native). Empty for a detection model.
  std::vector<std::uint8_t> mask;
  /// The mask's outline in the original image's pixels, x y pairs (Ultralytics' masks.xy:
  /// masks2segments of the mask it computed, scaled to the image). Empty for a detection model.
  std::vector<float> polygon;
  /// A pose model's keypoints of the object in the original image's pixels: x y (and the
  /// visibility's sigmoid when keypoint_dims is 3) per keypoint, Ultralytics' Results.keypoints.data
  /// (scale_coords from the network input). Empty for other models.
  std::vector<float> keypoints;
  int keypoint_dims = 0;  ///< 2 or 3 for a pose model, else 0
  /// An OBB model's rotated box in the original image's pixels: centre x, centre y, width, height and
  /// angle (radians), Ultralytics' Results.obb.xywhr (scale_boxes with xywh: not clipped); x1 .. y2
  /// then hold its corners' upright bounds (OBB.xyxy) and corners() the corners. Empty for other models.
  std::vector<float> xywhr;
  /// An OBB box's 4 corners, x y pairs (Ultralytics' OBB.xyxyxyxy); empty for other models.
  std::vector<float> corners() const;
};

/// Milliseconds per image of the three stages, as Ultralytics' `Results.speed`.
struct Speed {
  double preprocess = 0, inference = 0, postprocess = 0;
};

/// The detections of one image (a classification model's class probabilities instead).
struct Prediction {
  std::vector<Detection> boxes;  ///< descending confidence; empty for a classification model
  /// A classification model's probability of each class (softmax; Ultralytics' Results.probs.data);
  /// empty for the others.
  std::vector<float> probs;
  /// Its five most probable classes (fewer when nc < 5), most probable first (Probs.top5).
  std::vector<std::int64_t> top5;
  int orig_h = 0, orig_w = 0;    ///< the image's size
  int input_h = 0, input_w = 0;  ///< the letterboxed network input's size
  Speed speed;                   ///< per image (a batch's time divided by its images)
};

/// An image in memory that the Predictor reads without copying: 8-bit, 3 channels interleaved
/// (HWC), RGB or BGR, rows `row_bytes` apart (0: width * 3).
struct PixelView {
  const std::uint8_t* pixels = nullptr;
  int height = 0;
  int width = 0;
  bool bgr = false;          ///< true for OpenCV's order
  std::size_t row_bytes = 0;
};

/// Runs a YOLO detection model on images as Ultralytics' DetectionPredictor does (an OBB model as its
/// OBBPredictor: rotated NMS by ProbIoU, Detection::xywhr; a segmentation
/// model as its SegmentationPredictor: each detection's mask and outline too, detections whose
/// mask is empty dropped; a classification model as its ClassificationPredictor: the shorter side
/// resized to imgsz and the centre imgsz square cropped, data::classify_centre_crop, then the class
/// probabilities, Prediction::probs and top5): LetterBox
/// to `imgsz` with the minimal padding to a multiple of the stride when the batch's images share
/// one size (else the full imgsz), BGR -> RGB, /255, the network in inference mode (Conv+BN
/// fused; on the CPU run by oneDNN's primitives directly, docs/predict.md), NMS without
/// multi-label, boxes scaled back to the original image and clipped.
///
/// Built from a weights file: an Ultralytics `.pt`, a yolo_train checkpoint (`.ytckpt`, its EMA
/// weights) or `.safetensors` (io::read_model_weights()). Not thread-safe: use one Predictor per
/// thread (each holds its own model); calls on one Predictor from several threads must be
/// serialised by the caller. Intra-op threads are libtorch's global setting.
class Predictor {
 public:
  /// Loads the weights; throws yolotrain::Error naming the file when they cannot be read or do
  /// not fit a YOLOv8 detection model, ConfigError for a bad device.
  explicit Predictor(const std::filesystem::path& weights, PredictOptions options = {});
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  /// Detections in one image file (JPEG or PNG, EXIF orientation applied); throws
  /// yolotrain::Error naming the file when it cannot be decoded.
  Prediction predict(const std::filesystem::path& image);
  /// Detections in a decoded image (yolotrain's BGR Image).
  Prediction predict(const data::Image& image);
  /// Detections in pixels in memory (copied once into the letterbox).
  Prediction predict(const PixelView& image);
  /// Detections in several images, run as one batch.
  std::vector<Prediction> predict(const std::vector<data::Image>& images);

  /// Class names by index.
  const std::vector<std::string>& names() const;
  /// The options in use (imgsz rounded to the stride).
  const PredictOptions& options() const;
  /// What the weights were ("Ultralytics 8.2.82 checkpoint (ema)", ...).
  const std::string& description() const;
  /// The forward that runs: "oneDNN nhwc", "oneDNN nChw16c bf16", "libtorch fused", "libtorch
  /// unfused", "libtorch CUDA fp16", ... (the labels predict_bench prints).
  const std::string& forward() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// `image` as yolotrain's BGR Image (a copy).
data::Image to_image(const PixelView& image);

}  // namespace yolotrain::predict
