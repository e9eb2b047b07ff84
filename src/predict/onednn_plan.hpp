#pragma once
// A plan: the oneDNN primitives of the detection network for one input size (batch 1), built
// layer by layer by a PlanBuilder (docs/predict.md, "The oneDNN forward").
#include <ATen/core/Tensor.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onednn_compat.hpp"

namespace yolotrain::predict::detail {

// Short names for the oneDNN types the plan's files use.
namespace dn = dnnl;
using dims = dnnl::memory::dims;
using ftag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;
constexpr auto bf16 = dnnl::memory::data_type::bf16;

/// Something in the model the oneDNN forward does not run (the caller falls back to libtorch's).
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
  /// Set for a step libtorch runs (PlanBuilder::host): called with `args` instead of the primitive.
  std::function<void(const std::unordered_map<int, dnnl::memory>&)> host = nullptr;
};

struct Plan {
  /// One of Detect's raw levels [1, 4 * reg_max + nc, h, w], NCHW, in the arena.
  struct Output {
    std::vector<int64_t> sizes;
    std::size_t offset = 0;
  };
  dnnl::memory input;  ///< float32 NCHW (NHWC in the nhwc layout); the caller's image becomes its data on each call
  std::vector<Step> steps;
  std::vector<Output> outputs;
  /// Every activation's place in the arena all plans share (one plan runs at a time).
  std::vector<std::pair<dnnl::memory, std::size_t>> bindings;
  std::size_t arena_bytes = 0;
  void* bound = nullptr;  ///< the arena the activations point into now

  /// Points the activations into `arena` (at least arena_bytes) unless they already are.
  void bind(void* arena);
  /// Runs the steps on `input` (float32, the plan's size and layout) and returns Detect's levels: views
  /// of the arena, valid until the next run of any plan.
  std::vector<at::Tensor> run(dnnl::stream& stream, void* input);
};

/// A convolution as oneDNN takes it: OIHW weights, a bias, square kernel, stride and padding.
struct ConvParams {
  at::Tensor weight, bias;
  int64_t stride = 1, pad = 0;
  bool silu = false;
  int64_t groups = 1;  ///< weight is [O, I / groups, k, k]
};

/// Weights and biases reordered into the layout a primitive chose, once for all plans. The
/// tensors are the model's parameters or slices of them (a C2f's cv1 runs as two halves), alive
/// as long as the model: the address of a tensor's first element names it.
class PackedWeights {
 public:
  dnnl::memory get(const at::Tensor& t, const dnnl::memory::desc& md, const dnnl::engine& engine,
                   dnnl::stream& stream);

 private:
  std::map<const void*, std::vector<dnnl::memory>> packed_;
};

/// Appends primitives to a plan. Values are memories in one layout and one data type (float32, or
/// bfloat16 for weights and activations alike) whose storage is laid out at
/// the end (finish()): an arena where values not alive at the same time share bytes. A Concat
/// whose parts fill whole channel blocks costs nothing: in a blocked layout at batch 1, channels
/// [c0, c0 + c) with c0 and c multiples of the block are one dense run of memory, so each part is
/// written straight into its slice of the Concat's buffer.
class PlanBuilder {
 public:
  PlanBuilder(const dnnl::engine& engine, dnnl::stream& stream, dnnl::memory::format_tag layout,
              dnnl::memory::data_type type, PackedWeights& weights, Plan& plan)
      : engine_(engine), stream_(stream), layout_(layout), type_(type), weights_(weights), plan_(plan) {}

  /// The float32 image (Plan::input), converted to the plan's data type when that differs.
  int input(const dnnl::memory::dims& nchw);
  /// [silu](conv(src) + bias) [+ residual]
  int conv(int src, const ConvParams& p, int residual = -1);
  int concat(const std::vector<int>& srcs);
  int max_pool(int src, int64_t k, int64_t stride, int64_t pad);
  int upsample_nearest(int src, int64_t factor);
  /// A layer oneDNN has no primitives for, run by libtorch inside the plan: `fn` gets the value as
  /// a float32 NCHW tensor and returns the result, of `out_channels` channels and the same size.
  int host(int src, int64_t out_channels, std::function<at::Tensor(const at::Tensor&)> fn);
  /// The values side by side along channels in one float32 NCHW buffer (a Detect level, Plan::outputs).
  void output(const std::vector<int>& srcs);
  /// Lays the arena out (Plan::bindings, arena_bytes).
  void finish();

 private:
  struct Value {
    dnnl::memory memory;
    int part_of = -1;        // the in-place Concat whose buffer holds it
    std::size_t offset = 0;  // bytes into that buffer
    int first = -1, last = -1;  // steps that write it first and read it last
    bool output = false;        // read after the last step (lives to the end)
  };

  int add(const dnnl::memory::desc& md);
  int append(Step step, const dnnl::memory::desc& dst_desc);
  const dnnl::memory& read(int v);  // as a step's source: extends its life to that step
  dnnl::memory::dims shape(int v) const { return onednn_compat::dims_of(desc(v)); }
  dnnl::memory::desc desc(int v) const { return values_[static_cast<std::size_t>(v)].memory.get_desc(); }
  int64_t block() const;

  const dnnl::engine& engine_;
  dnnl::stream& stream_;
  dnnl::memory::format_tag layout_;
  dnnl::memory::data_type type_;
  PackedWeights& weights_;
  Plan& plan_;
  std::vector<Value> values_;
  std::vector<std::pair<dnnl::memory, int>> views_;  // memories at the start of a value's buffer
  std::vector<int> outputs_;                          // the values behind Plan::outputs
  int input_ = -1;
};

}  // namespace yolotrain::predict::detail
