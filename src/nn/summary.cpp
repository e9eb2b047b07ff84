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

ModelSummary summarize(DetectionModelImpl& model, int64_t imgsz) {
  ModelSummary s;
  s.name = model.yaml_path().stem().string();
  if (!model.scale().empty() && s.name.size() > 1 && std::isdigit(static_cast<unsigned char>(s.name.back()))) {
    s.name += model.scale();
  }
  // Ultralytics' Conv blocks share one SiLU instance, which model.modules() lists once.
  bool silu = false;
  s.layers = 1;
  // A Conv without activation has its own nn.Identity there (Ultralytics' `act=False`), which
  // yolotrain's Conv leaves out: counted as the module it is in Ultralytics.
  for (const auto& m : model.modules(/*include_self=*/false)) {
    if (m->as<torch::nn::SiLUImpl>() != nullptr) {
      silu = true;
    } else {
      ++s.layers;
    }
    if (const auto* conv = m->as<ConvImpl>(); conv != nullptr && conv->act.is_empty()) ++s.layers;
  }
  s.layers += silu ? 1 : 0;
  for (const auto& p : model.parameters()) {
    s.parameters += p.numel();
    if (p.requires_grad()) s.gradients += p.numel();
  }
  s.gflops = count_gflops(model, imgsz);
  return s;
}

}  // namespace yolotrain::nn
