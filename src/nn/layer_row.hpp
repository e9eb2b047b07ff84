#pragma once

// A model YAML row as a layer kind's build() reads it: its arguments with bounds and row-context
// errors, its input channels and the model around it (private to src/nn).

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model_def.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/nn/detect.hpp"
#include "yolotrain/nn/layer_kind.hpp"

namespace yolotrain::nn::detail {

class LayerRow {
 public:
  LayerRow(const ModelDef& def, const LayerDef& layer, std::vector<int64_t> in_channels)
      : def_(def), layer_(layer), in_channels_(std::move(in_channels)) {}

  const ModelDef& model() const { return def_; }
  const LayerDef& layer() const { return layer_; }
  /// Channels of the first input.
  int64_t c1() const { return in_channels_.at(0); }
  /// Channels of every input, in `from` order.
  const std::vector<int64_t>& in_channels() const { return in_channels_; }
  /// The repeat count after depth scaling.
  int64_t repeats() const { return layer_.repeats; }
  /// True when some row of the model uses `module`.
  bool model_has(const std::string& module) const;
  /// An error naming the file and the row.
  Error error(const std::string& what) const;

  /// args[i] is present and not None.
  bool has(size_t i) const;
  /// args[i] as an integer ("nc" is the model's nc), `fallback` when absent.
  int64_t integer(size_t i, int64_t fallback) const;
  int64_t integer_in(size_t i, int64_t fallback, int64_t lo, int64_t hi) const;
  double real(size_t i, double fallback) const;
  double real_in(size_t i, double fallback, double lo, double hi) const;
  bool boolean(size_t i, bool fallback) const;
  std::string text(size_t i, const std::string& fallback) const;
  /// Output channels args[0], scaled as Ultralytics does (a value equal to nc is left alone).
  int64_t channels() const;

 private:
  Error bad(size_t i, const std::string& expected) const;

  const ModelDef& def_;
  const LayerDef& layer_;
  std::vector<int64_t> in_channels_;
};

/// A Forward that runs `Impl::forward(inputs[0])`.
template <class Impl>
LayerKind::Forward forward_one() {
  return [](torch::nn::Module& m, const std::vector<at::Tensor>& in) { return m.as<Impl>()->forward(in[0]); };
}

// One function per kind file (src/nn/kinds/), listed by layer_kinds().
LayerKind conv_kind();
LayerKind dwconv_kind();
LayerKind c2f_kind();
LayerKind c3k2_kind();
LayerKind bottleneck_kind();
LayerKind sppf_kind();
LayerKind c2psa_kind();
LayerKind upsample_kind();
LayerKind concat_kind();
LayerKind detect_kind();
LayerKind segment_kind();
LayerKind segment26_kind();
LayerKind pose_kind();
LayerKind pose26_kind();
LayerKind obb_kind();
LayerKind obb26_kind();
LayerKind classify_kind();

/// A Detect row's options (also the start of a Segment row's).
DetectOptions detect_options(const LayerRow& row);

}  // namespace yolotrain::nn::detail
