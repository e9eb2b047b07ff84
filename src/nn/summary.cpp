#include "yolotrain/nn/summary.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>

#include <cctype>
#include <cstdio>

namespace yolotrain::nn {
namespace {

std::string thousands(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Restores the thread's MAC counter and the model's mode when the count ends (or throws).
struct CountScope {
  CountScope(DetectionModelImpl& m, double* counter) : model(m), was_training(m.is_training()) {
    detail::mac_counter() = counter;
    model.eval();
  }
  ~CountScope() {
    detail::mac_counter() = nullptr;
    model.train(was_training);
  }
  DetectionModelImpl& model;
  bool was_training;
};

}  // namespace

std::string ModelSummary::to_string() const {
  char flops[32];
  std::snprintf(flops, sizeof flops, "%.1f", gflops);
  return name + " summary: " + thousands(layers) + " layers, " + thousands(parameters) + " parameters, " +
         thousands(gradients) + " gradients, " + flops + " GFLOPs";
}

double count_gflops(DetectionModelImpl& model, int64_t imgsz) {
  const int64_t base = 2 * model.max_stride();
  const int64_t side = imgsz % base == 0 ? base : imgsz;
  const double scale = static_cast<double>(imgsz) * static_cast<double>(imgsz) / static_cast<double>(side * side);
  const auto p = model.parameters().front();
  double macs = 0;
  {
    CountScope scope(model, &macs);
    torch::NoGradGuard no_grad;
    model.predict(at::zeros({1, model.options.ch(), side, side}, p.options()));  // the DFL conv counts too
  }
  return 2.0 * macs * scale / 1e9;
}

namespace {

// Ultralytics' layer count: up to 8.3 every module of model.modules() (the model itself too), 8.4
// only the leaves of named_modules(). Both list a module once, so the one SiLU instance all its
// Conv blocks share counts once; a Conv without activation has its own nn.Identity there, and a
// Detect with reg_max 1 an nn.Identity for `dfl`, which yolotrain leaves out: counted as the
// modules they are in Ultralytics.
int64_t count_layers(DetectionModelImpl& model) {
  const bool leaves_only = model.options.ultralytics() == "8.4";
  bool silu = false;
  int64_t layers = leaves_only ? 0 : 1;
  for (const auto& m : model.modules(/*include_self=*/false)) {
    if (m->as<torch::nn::SiLUImpl>() != nullptr) {
      silu = true;
    } else if (!leaves_only || m->children().empty()) {
      ++layers;
    }
    if (const auto* conv = m->as<ConvImpl>(); conv != nullptr && conv->act.is_empty()) ++layers;
  }
  // Classify's AdaptiveAvgPool2d is a module in Ultralytics (`pool`), a function here.
  if (model.classifier()) return layers + 1 + (silu ? 1 : 0);
  if (model.head()->dfl.is_empty()) ++layers;
  // YOLO26-pose's RealNVP builds its nets with SiLU instances of their own, each a layer.
  if (!model.head()->flow_model.is_empty()) {
    for (const auto& m : model.head()->flow_model->modules(/*include_self=*/false))
      layers += m->as<torch::nn::SiLUImpl>() != nullptr;
  }
  // Ultralytics builds the one-to-one branch by copy.deepcopy(cv2 / cv3, and a Segment's cv4): each
  // copy brings its own instance of the shared SiLU.
  if (silu && !model.head()->one2one_cv2.is_empty()) layers += model.head()->one2one_cv4.is_empty() ? 2 : 3;
  return layers + (silu ? 1 : 0);
}

}  // namespace

ModelSummary summarize(DetectionModelImpl& model, int64_t imgsz) {
  ModelSummary s;
  s.name = model.yaml_path().stem().string();
  if (!model.scale().empty() && s.name.size() > 1 && std::isdigit(static_cast<unsigned char>(s.name.back()))) {
    s.name += model.scale();
  }
  s.layers = count_layers(model);
  for (const auto& p : model.parameters()) {
    s.parameters += p.numel();
    if (p.requires_grad()) s.gradients += p.numel();
  }
  s.gflops = count_gflops(model, imgsz);
  return s;
}

}  // namespace yolotrain::nn
