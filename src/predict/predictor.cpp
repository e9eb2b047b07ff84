#include "yolotrain/predict/predictor.hpp"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <set>

#include "../engine/run_folder.hpp"
#include "cpu_forward.hpp"
#include "instance_masks.hpp"
#include "onednn_net.hpp"
#include "yolotrain/data/augment.hpp"
#include "yolotrain/data/rotated_boxes.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/metrics/boxes.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/memory_format.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/predict/preprocess.hpp"

namespace yolotrain::predict {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// An image's Prediction with its size and the network input's, nothing found yet.
Prediction sized_prediction(const data::Image& image, const at::Tensor& input) {
  Prediction p;
  p.orig_h = image.height;
  p.orig_w = image.width;
  p.input_h = static_cast<int>(input.size(2));
  p.input_w = static_cast<int>(input.size(3));
  return p;
}

// An OBB detection: its rotated box (OBB.xywhr) and, in x1 .. y2, its corners' upright bounds (OBB.xyxy).
void set_rotated(Detection& d, const std::array<float, 5>& xywhr) {
  d.xywhr.assign(xywhr.begin(), xywhr.end());
  const std::array<float, 8> k = data::xywhr_corners(xywhr);
  d.x1 = std::min({k[0], k[2], k[4], k[6]}), d.x2 = std::max({k[0], k[2], k[4], k[6]});
  d.y1 = std::min({k[1], k[3], k[5], k[7]}), d.y2 = std::max({k[1], k[3], k[5], k[7]});
}

}  // namespace

std::vector<float> Detection::corners() const {
  if (xywhr.size() != 5) return {};
  const std::array<float, 8> k = data::xywhr_corners({xywhr[0], xywhr[1], xywhr[2], xywhr[3], xywhr[4]});
  return {k.begin(), k.end()};
}

struct Predictor::Impl {
  PredictOptions options;
  nn::DetectionModel net{nullptr};
  std::vector<std::string> names;
  std::string description;
  c10::Device device{c10::kCPU};
  at::ScalarType dtype = at::kFloat;
  c10::MemoryFormat format = c10::MemoryFormat::Contiguous;
  std::unique_ptr<detail::OnednnNet> onednn;  // the CPU forward when it runs this model
  std::string forward;                        // its label, or libtorch's
  bool segment = false;                       // a Segment head: masks too
  bool classify = false;                      // a Classify head: class probabilities, no boxes
  bool obb = false;                           // an OBB head: rotated boxes
  std::vector<std::int64_t> kpt_shape;        // a Pose head's keypoints (empty otherwise)

  void compile_onednn(const detail::CpuForward& how);

  std::vector<Prediction> run(const std::vector<const data::Image*>& images);
  std::vector<Prediction> classify_run(const std::vector<const data::Image*>& images);
};

Predictor::Predictor(const fs::path& weights, PredictOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (options.imgsz_h <= 0 || options.imgsz_w <= 0) throw Error("predict: imgsz must be positive");
  const detail::CpuForward how = detail::parse_cpu_forward(options.forward);
  m.device = engine::run_device(options.device);
  if (options.half && m.device.is_cpu()) {
    std::cerr << "predict: half=true applies on CUDA only; predicting in float32 on the CPU" << std::endl;
    options.half = false;
  }
  io::ModelWeights w = io::read_model_weights(weights);
  m.names = w.names;
  m.description = w.description;
  m.net = io::build_model(w, weights.string());  // in float32, as AutoBackend's .float()
  m.segment = m.net->task() == "segment";
  m.classify = m.net->task() == "classify";
  m.obb = m.net->task() == "obb";
  if (!m.classify) m.kpt_shape = m.net->head()->options.kpt_shape();
  if (!options.end2end && !m.classify) m.net->head()->set_end2end(false);  // YOLO26's NMS head (8.4's end2end=False)
  options.imgsz_h = nn::check_imgsz(options.imgsz_h, m.net->max_stride());
  options.imgsz_w = nn::check_imgsz(options.imgsz_w, m.net->max_stride());
  m.options = options;
  m.net->eval();
  if (options.fuse) m.net->fuse();
  m.dtype = options.half ? at::kHalf : at::kFloat;
  m.net->to(m.device, m.dtype);
  if (m.device.is_cpu() && how.onednn && m.classify) {
    std::cerr << "predict: running libtorch's forward: the oneDNN forward does not run a Classify head yet"
              << std::endl;
  } else if (m.device.is_cpu() && how.onednn && !m.kpt_shape.empty()) {
    std::cerr << "predict: running libtorch's forward: the oneDNN forward does not run a pose head's keypoints yet"
              << std::endl;
  } else if (m.device.is_cpu() && how.onednn && m.obb) {
    std::cerr << "predict: running libtorch's forward: the oneDNN forward does not run an OBB head's angles yet"
              << std::endl;
  } else if (m.device.is_cpu() && how.onednn && m.segment) {
    std::cerr << "predict: running libtorch's forward: the oneDNN forward does not run a segmentation head's "
                 "prototypes yet" << std::endl;
  } else if (m.device.is_cpu() && how.onednn) {
    if (options.fuse) {
      m.compile_onednn(how);
    } else if (options.forward != "auto") {
      std::cerr << "predict: running libtorch's forward: forward=" << options.forward
                << " runs the fused network (fuse=true)" << std::endl;
    }
  }
  // libtorch's forward on the CPU: the measured faster layout (docs/nn.md), as training and
  // validation use. The oneDNN forward reads NCHW and has packed the weights as they are.
  if (m.device.is_cpu() && !m.onednn) {
    m.format = nn::preferred_cpu_memory_format();
    nn::set_memory_format(*m.net, m.format);
  }
  if (!m.onednn) {
    m.forward = std::string("libtorch ") + (m.device.is_cpu() ? "" : "CUDA ") + (options.fuse ? "fused" : "unfused") +
                (options.half ? " fp16" : "");
  }
}

void Predictor::Impl::compile_onednn(const detail::CpuForward& how) {
  std::string why;
  onednn = detail::OnednnNet::compile(net, why, how.layout, how.bf16);
  if (!onednn && how.bf16 && !detail::OnednnNet::native_bf16()) {  // the CPU, not the model, said no
    std::cerr << "predict: running float32: " << why << std::endl;
    onednn = detail::OnednnNet::compile(net, why, how.layout);
  }
  if (onednn) forward = onednn->label();
  else std::cerr << "predict: running libtorch's forward: " << why << std::endl;
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

// ClassificationPredictor: centre crops, the softmax, Probs' top 5 (torch's descending argsort).
std::vector<Prediction> Predictor::Impl::classify_run(const std::vector<const data::Image*>& images) {
  c10::InferenceMode inference;
  const auto t0 = Clock::now();
  const at::Tensor x =
      classify_preprocess(images, options.imgsz_h, options.imgsz_w).to(device).to(dtype).div_(255).contiguous(format);
  const double pre = ms_since(t0);
  const auto t1 = Clock::now();
  const at::Tensor probs = net->predict(x).to(at::kCPU, at::kFloat).contiguous();
  const double infer = ms_since(t1);
  const auto t2 = Clock::now();
  const at::Tensor order = at::argsort(probs, 1, /*descending=*/true).slice(1, 0, 5).contiguous();
  std::vector<Prediction> preds;
  for (std::size_t i = 0; i < images.size(); ++i) {
    Prediction p = sized_prediction(*images[i], x);
    const at::Tensor row = probs[static_cast<std::int64_t>(i)];
    p.probs.assign(row.data_ptr<float>(), row.data_ptr<float>() + row.numel());
    const at::Tensor top = order[static_cast<std::int64_t>(i)];
    p.top5.assign(top.data_ptr<std::int64_t>(), top.data_ptr<std::int64_t>() + top.numel());
    preds.push_back(std::move(p));
  }
  const double post = ms_since(t2), n = static_cast<double>(images.size());
  for (auto& p : preds) p.speed = {pre / n, infer / n, post / n};
  return preds;
}

std::vector<Prediction> Predictor::Impl::run(const std::vector<const data::Image*>& images) {
  if (images.empty()) return {};
  if (classify) return classify_run(images);
  c10::InferenceMode inference;
  const auto t0 = Clock::now();
  at::Tensor x = preprocess(images, options.imgsz_h, options.imgsz_w, true, net->max_stride())
                     .to(device)
                     .to(dtype)
                     .div_(255)
                     .contiguous(format);
  const double pre = ms_since(t0);

  const auto t1 = Clock::now();
  at::Tensor out, proto;
  if (segment || !kpt_shape.empty() || obb) {  // the head's extra outputs: prototypes, keypoints, angles
    const nn::HeadOutputs heads = net->forward_heads(x);
    out = net->head()->inference(heads);
    if (segment) proto = heads.proto.to(at::kCPU, at::kFloat);
  } else {
    out = onednn ? onednn->predict(x) : net->predict(x);
  }
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
  const double infer = ms_since(t1);

  const auto t2 = Clock::now();
  metrics::NmsOptions nms;
  nms.conf = options.conf;
  nms.iou = options.iou;
  nms.max_det = options.max_det;
  nms.classes = options.classes;
  nms.agnostic = options.agnostic_nms;
  nms.multi_label = false;
  nms.end2end = net->head()->end2end();  // YOLO26: the top-k needs no NMS
  nms.rotated = obb;  // OBBPredictor: ProbIoU NMS, rows x y w h conf cls angle
  if (segment || !kpt_shape.empty() || obb) nms.nc = net->nc();  // the mask coefficients, keypoints or angle ride along
  const std::vector<at::Tensor> kept = metrics::non_max_suppression(out.to(at::kFloat), nms);
  const std::array<std::int64_t, 2> input_shape{x.size(2), x.size(3)};
  std::vector<Prediction> preds;
  for (std::size_t i = 0; i < images.size(); ++i) {
    Prediction p = sized_prediction(*images[i], x);
    at::Tensor det = kept[i].to(at::kCPU).contiguous();
    detail::InstanceMasks masks =
        segment ? detail::instance_masks(det, proto[static_cast<std::int64_t>(i)], input_shape, {p.orig_h, p.orig_w},
                                         options.retina_masks)
                : detail::InstanceMasks{};
    if (segment) det = masks.detections;
    at::Tensor xyxy = det.slice(1, 0, 4);
    if (!segment) metrics::scale_boxes(input_shape, xyxy, {p.orig_h, p.orig_w}, std::nullopt, true, obb, !obb);
    at::Tensor keypoints;  // PosePredictor: scale_coords from the network input to the image
    if (!kpt_shape.empty()) {
      keypoints = det.slice(1, 6).reshape({-1, kpt_shape[0], kpt_shape[1]}).clone();
      metrics::scale_coords(input_shape, keypoints, {p.orig_h, p.orig_w});
    }
    const auto a = det.accessor<float, 2>();
    for (std::int64_t r = 0; r < det.size(0); ++r) {
      Detection d;
      d.x1 = a[r][0], d.y1 = a[r][1], d.x2 = a[r][2], d.y2 = a[r][3], d.conf = a[r][4];
      d.cls = static_cast<std::int64_t>(a[r][5]);
      if (keypoints.defined()) {
        const at::Tensor k = keypoints[r].contiguous();
        d.keypoints.assign(k.data_ptr<float>(), k.data_ptr<float>() + k.numel());
        d.keypoint_dims = static_cast<int>(kpt_shape[1]);
      }
      if (obb) set_rotated(d, {a[r][0], a[r][1], a[r][2], a[r][3], a[r][6]});
      d.name = d.cls >= 0 && d.cls < static_cast<std::int64_t>(names.size()) ? names[d.cls] : std::to_string(d.cls);
      if (segment) {
        d.mask = std::move(masks.bitmaps[static_cast<std::size_t>(r)]);
        d.polygon = std::move(masks.polygons[static_cast<std::size_t>(r)]);
      }
      p.boxes.push_back(std::move(d));
    }
    preds.push_back(std::move(p));
  }
  const double post = ms_since(t2);
  const double n = static_cast<double>(images.size());
  for (auto& p : preds) p.speed = {pre / n, infer / n, post / n};
  return preds;
}

Prediction Predictor::predict(const fs::path& image) { return predict(data::decode_image(image)); }

Prediction Predictor::predict(const data::Image& image) { return impl_->run({&image}).front(); }

Prediction Predictor::predict(const PixelView& image) { return predict(to_image(image)); }

std::vector<Prediction> Predictor::predict(const std::vector<data::Image>& images) {
  std::vector<const data::Image*> ptrs;
  for (const auto& im : images) ptrs.push_back(&im);
  return impl_->run(ptrs);
}

const std::vector<std::string>& Predictor::names() const { return impl_->names; }
const PredictOptions& Predictor::options() const { return impl_->options; }
const std::string& Predictor::description() const { return impl_->description; }
const std::string& Predictor::forward() const { return impl_->forward; }

data::Image to_image(const PixelView& v) {
  if (!v.pixels || v.height <= 0 || v.width <= 0) throw Error("predict: a PixelView without pixels");
  const std::size_t row = v.row_bytes ? v.row_bytes : static_cast<std::size_t>(v.width) * 3;
  if (row < static_cast<std::size_t>(v.width) * 3) throw Error("predict: PixelView rows shorter than width * 3");
  data::Image im(v.height, v.width);
  for (int y = 0; y < v.height; ++y) {
    const std::uint8_t* src = v.pixels + row * y;
    std::uint8_t* dst = im.pixel(y, 0);
    if (v.bgr) {
      std::memcpy(dst, src, static_cast<std::size_t>(v.width) * 3);
      continue;
    }
    for (int x = 0; x < v.width; ++x) {
      dst[3 * x] = src[3 * x + 2];
      dst[3 * x + 1] = src[3 * x + 1];
      dst[3 * x + 2] = src[3 * x];
    }
  }
  return im;
}

}  // namespace yolotrain::predict
