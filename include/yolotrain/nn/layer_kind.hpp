#pragma once

// Layer kinds: everything the model builder and the .pt reader know about one module name of a
// model YAML, described once (src/nn/kinds/<kind>.cpp). The ONNX exporter and the oneDNN planner
// key their own tables by the same name (src/export/onnx_kinds.cpp, src/predict/onednn_kinds.cpp).
// docs/nn.md "Adding a layer kind" is the checklist.

#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace yolotrain::nn {
namespace detail {
class LayerRow;
}

/// One layer kind (a `module` name of a model YAML row).
struct LayerKind {
  /// What build() makes of a row: the module and its output channels.
  struct Built {
    std::shared_ptr<torch::nn::Module> module;
    int64_t c2 = 0;
  };
  using Build = std::function<Built(const detail::LayerRow&)>;
  /// Runs the module on its inputs (one tensor unless `multi_input`).
  using Forward = std::function<at::Tensor(torch::nn::Module&, const std::vector<at::Tensor>&)>;

  /// How a row of the kind is read.
  struct Rules {
    /// Takes the row's repeat count (Ultralytics' parse_model repeat_modules: C2f, C3k2, C2PSA, ...).
    bool takes_repeats = false;
    /// `from` may be a list of layers (Concat, Detect).
    bool multi_input = false;
    /// The detection head: the last row, run by DetectionModel itself (forward is empty).
    bool head = false;
  };

  /// The YAML module name, Ultralytics' class name ("C3k2").
  std::string name;
  Rules rules;
  /// Ultralytics classes a `.pt` may pickle for a layer of this kind and inside it (the kind's own
  /// class first; torch's Conv2d, BatchNorm2d, ... are accepted for every kind).
  std::vector<std::string> pt_classes;
  Build build;
  Forward forward;
};

/// The rules of most kinds: one input, no repeat count.
inline constexpr LayerKind::Rules kOneInput{};
/// A kind that takes the repeat count (C2f, C3k2, C2PSA).
inline constexpr LayerKind::Rules kRepeated{true, false, false};
/// A kind whose `from` may be a list (Concat).
inline constexpr LayerKind::Rules kManyInputs{false, true, false};
/// The detection head (Detect).
inline constexpr LayerKind::Rules kHead{false, true, true};

/// Every layer kind, in the order docs/nn.md lists them.
const std::vector<LayerKind>& layer_kinds();

/// The kind named `name` ("nn." / "torch.nn." already stripped), or nullptr.
const LayerKind* find_layer_kind(const std::string& name);

/// "Conv, DWConv, C2f, ..." for messages.
std::string layer_kind_names();

}  // namespace yolotrain::nn
