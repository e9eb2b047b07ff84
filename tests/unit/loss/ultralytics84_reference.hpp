#pragma once
// What the tests against Ultralytics 8.4's own losses share (scripts/ultralytics84_loss.py and
// ultralytics84_seg_loss.py): the batch image, a genuine checkpoint in train mode, and the
// comparison of a loss with Ultralytics' total and items.
#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

namespace yolotrain::test {

/// ../shared/weights/ultralytics: the genuine checkpoints the scripts ran on.
inline std::filesystem::path ultralytics_weights() {
  return std::filesystem::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics";
}

/// The scripts' image: 0.5 + 0.5 sin(0.05 x + 0.07 y + 1.3 c + 2.1 b) in float64, then float32.
inline at::Tensor ultralytics84_image(int64_t b, int64_t h, int64_t w) {
  const auto d = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor x = at::arange(w, d).view({1, 1, 1, w}), y = at::arange(h, d).view({1, 1, h, 1});
  const at::Tensor c = at::arange(3, d).view({1, 3, 1, 1}), n = at::arange(b, d).view({b, 1, 1, 1});
  return (0.5 + 0.5 * at::sin(0.05 * x + 0.07 * y + 1.3 * c + 2.1 * n)).to(at::kFloat);
}

/// ultralytics_weights()/<folder>/best.pt built and put in train mode, as the scripts use it.
inline nn::DetectionModel train_mode(const std::string& folder) {
  const std::filesystem::path pt = ultralytics_weights() / folder / "best.pt";
  nn::DetectionModel model = io::build_model(io::read_model_weights(pt), pt.string());
  model->train();
  return model;
}

/// The total and each of Ultralytics' items ({"total", "items", "names"}) to `epsilon` (relative).
inline void check_against_ultralytics(const loss::LossOutput& mine, const nlohmann::json& ref, double epsilon = 1e-4) {
  const double total = mine.total.item<double>();
  INFO("total " << total << " vs Ultralytics " << ref["total"].get<double>());
  CHECK(total == Approx(ref["total"].get<double>()).epsilon(epsilon));
  REQUIRE(mine.items.numel() == static_cast<int64_t>(ref["items"].size()));
  for (size_t i = 0; i < ref["items"].size(); ++i) {
    INFO(ref["names"][i].get<std::string>() << " " << mine.items[static_cast<int64_t>(i)].item<double>());
    CHECK(mine.items[static_cast<int64_t>(i)].item<double>() ==
          Approx(ref["items"][i].get<double>()).epsilon(epsilon).margin(1e-6));
  }
}

}  // namespace yolotrain::test
