#include "onednn_net.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/modules/container/sequential.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstring>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "yolotrain/error.hpp"

namespace yolotrain::predict::detail {
namespace {

namespace dn = dnnl;
using dims = dn::memory::dims;
using ftag = dn::memory::format_tag;
constexpr auto f32 = dn::memory::data_type::f32;

// Something in the model this path does not run; compile() reports it and the caller falls back.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Step {
  dn::primitive primitive;
  std::unordered_map<int, dn::memory> args;
};

// The primitives for one input shape, at batch 1.
struct Plan {
  dn::memory input;                 // NCHW; the caller's tensor becomes its data on each call
  std::vector<Step> steps;
  std::vector<at::Tensor> outputs;  // Detect's raw levels [1, 4 * reg_max + nc, h, w]
  std::vector<at::Tensor> storage;  // the activations' memory
};

// A convolution as oneDNN needs it: OIHW weights, a bias, square kernel/stride/padding.
struct ConvParams {
  at::Tensor weight, bias;
  int64_t stride = 1, pad = 0;
  bool silu = false;
};

ConvParams params_of(const torch::nn::Conv2dImpl& conv, bool silu) {
  const auto& o = conv.options;
  const auto* pad = c10::get_if<torch::ExpandingArray<2>>(&o.padding());
  if (o.groups() != 1) throw Unsupported("a grouped convolution (groups " + std::to_string(o.groups()) + ")");
  if ((*o.dilation())[0] != 1 || (*o.dilation())[1] != 1) throw Unsupported("a dilated convolution");
  if (!pad || (**pad)[0] != (**pad)[1] || (*o.kernel_size())[0] != (*o.kernel_size())[1] ||
      (*o.stride())[0] != (*o.stride())[1]) {
    throw Unsupported("a convolution with a non-square kernel, stride or padding");
  }
  if (!c10::holds_alternative<torch::enumtype::kZeros>(o.padding_mode())) throw Unsupported("a padding mode other than zeros");
  if (!conv.bias.defined()) throw Unsupported("a convolution without bias (BatchNorm not folded)");
  if (conv.weight.scalar_type() != at::kFloat || !conv.weight.device().is_cpu()) {
    throw Unsupported("weights that are not float32 on the CPU");
  }
  return {conv.weight.contiguous(), conv.bias.contiguous(), (*o.stride())[0], (**pad)[0], silu};
}

ConvParams params_of(const nn::ConvImpl& conv) {
  if (!conv.fused()) throw Unsupported("a Conv whose BatchNorm is not folded (fuse the model)");
  return params_of(*conv.conv, !conv.act.is_empty());
}

// Appends the primitives of one input shape's plan (batch 1). Values are memories in one blocked
// layout whose storage is given at the end (allocate()): a Concat whose parts fill whole channel
// blocks costs nothing, its parts are written straight into their slice of its buffer (in a blocked
// layout at batch 1, channels [c0, c0 + c) with c0 and c multiples of the block are one contiguous,
// dense run of memory).
class Builder {
 public:
  Builder(const dn::engine& engine, dn::stream& stream, ftag layout, Plan& plan)
      : engine_(engine), stream_(stream), layout_(layout), plan_(plan) {}

  int input(const dims& nchw) {
    input_ = add({nchw, f32, ftag::nchw});
    plan_.input = values_[input_].memory;
    return input_;
  }

  // dst = [silu](conv(src) + bias) [+ residual]
  int conv(int src, const ConvParams& p, int residual = -1) {
    const dims in = shape(src);
    const int64_t oc = p.weight.size(0), k = p.weight.size(2);
    if (p.weight.size(1) != in[1]) throw Unsupported("a convolution whose input channels do not match its weights");
    const dims out{in[0], oc, (in[2] + 2 * p.pad - k) / p.stride + 1, (in[3] + 2 * p.pad - k) / p.stride + 1};
    dn::post_ops ops;
    if (p.silu) ops.append_eltwise(1.f, dn::algorithm::eltwise_swish, 1.f, 0.f);
    if (residual >= 0) ops.append_binary(dn::algorithm::binary_add, desc(residual));
    dn::primitive_attr attr;
    attr.set_post_ops(ops);
    const dn::convolution_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::convolution_direct,
                                          desc(src), {{oc, in[1], k, k}, f32, ftag::any}, {{oc}, f32, ftag::x},
                                          {out, f32, layout_}, {p.stride, p.stride}, {p.pad, p.pad}, {p.pad, p.pad});
    const dn::convolution_forward::primitive_desc pd(d, attr, engine_);
    Step step{dn::convolution_forward(pd), {}};
    step.args[DNNL_ARG_SRC] = memory(src);
    step.args[DNNL_ARG_WEIGHTS] = reordered(p.weight, pd.weights_desc());
    step.args[DNNL_ARG_BIAS] = copied(p.bias);
    if (residual >= 0) step.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.silu ? 1 : 0) | DNNL_ARG_SRC_1] = memory(residual);
    return finish(std::move(step), pd.dst_desc());
  }

  int concat(const std::vector<int>& srcs) {
    dims out = shape(srcs.front());
    out[1] = 0;
    std::vector<dn::memory::desc> mds;
    bool in_place = out[0] == 1 && block() > 0;
    for (int v : srcs) {
      const dims d = shape(v);
      if (d[0] != out[0] || d[2] != out[2] || d[3] != out[3]) throw Unsupported("a Concat of differently sized maps");
      out[1] += d[1];
      mds.push_back(desc(v));
      in_place = in_place && v != input_ && values_[v].part_of < 0 && d[1] % block() == 0 &&
                 desc(v) == dn::memory::desc(d, f32, layout_);
    }
    if (in_place) {
      const int dst = add({out, f32, layout_});
      std::size_t offset = 0;
      for (int v : srcs) {
        values_[v].part_of = dst;
        values_[v].offset = offset;
        offset += desc(v).get_size();
      }
      return dst;
    }
    const dn::concat::primitive_desc pd({out, f32, layout_}, 1, mds, engine_);
    Step step{dn::concat(pd), {}};
    for (size_t i = 0; i < srcs.size(); ++i) step.args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = memory(srcs[i]);
    return finish(std::move(step), pd.dst_desc());
  }

  int max_pool(int src, int64_t k, int64_t stride, int64_t pad) {
    const dims in = shape(src);
    const dims out{in[0], in[1], (in[2] + 2 * pad - k) / stride + 1, (in[3] + 2 * pad - k) / stride + 1};
    const dn::pooling_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::pooling_max, desc(src),
                                      {out, f32, layout_}, {stride, stride}, {k, k}, {pad, pad}, {pad, pad});
    const dn::pooling_forward::primitive_desc pd(d, engine_);
    return finish({dn::pooling_forward(pd), {{DNNL_ARG_SRC, memory(src)}}}, pd.dst_desc());
  }

  int upsample_nearest(int src, int64_t factor) {
    const dims in = shape(src);
    const dims out{in[0], in[1], in[2] * factor, in[3] * factor};
    const dn::resampling_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::resampling_nearest,
                                         desc(src), {out, f32, layout_});
    const dn::resampling_forward::primitive_desc pd(d, engine_);
    return finish({dn::resampling_forward(pd), {{DNNL_ARG_SRC, memory(src)}}}, pd.dst_desc());
  }

  // The values side by side along channels, in a new NCHW tensor (one of Detect's raw levels).
  void output(const std::vector<int>& srcs) {
    dims out = shape(srcs.front());
    out[1] = 0;
    for (int v : srcs) out[1] += shape(v)[1];
    at::Tensor t = at::empty({out[0], out[1], out[2], out[3]}, at::kFloat);
    const dn::memory::desc whole(out, f32, ftag::nchw);
    int64_t offset = 0;
    for (int v : srcs) {
      const dims part = shape(v);
      const dn::memory dst(whole.submemory_desc(part, {0, offset, 0, 0}), engine_, t.data_ptr());
      plan_.steps.push_back({dn::reorder(memory(v), dst), {{DNNL_ARG_FROM, memory(v)}, {DNNL_ARG_TO, dst}}});
      offset += part[1];
    }
    plan_.outputs.push_back(t);
  }

  // Storage for every value: its own, or its slice of the Concat it is part of.
  void allocate() {
    for (size_t v = 0; v < values_.size(); ++v) {
      if (static_cast<int>(v) == input_ || values_[v].part_of >= 0) continue;
      const auto bytes = static_cast<int64_t>(values_[v].memory.get_desc().get_size());
      plan_.storage.push_back(at::empty({bytes}, at::kByte));
      values_[v].memory.set_data_handle(plan_.storage.back().data_ptr());
    }
    for (auto& value : values_) {
      if (value.part_of < 0) continue;
      auto* base = static_cast<std::uint8_t*>(values_[value.part_of].memory.get_data_handle());
      value.memory.set_data_handle(base + value.offset);
    }
  }

 private:
  struct Value {
    dn::memory memory;
    int part_of = -1;         // the in-place Concat whose buffer holds it
    std::size_t offset = 0;   // bytes into that buffer
  };

  int add(const dn::memory::desc& md) {
    values_.push_back({dn::memory(md, engine_, DNNL_MEMORY_NONE)});
    return static_cast<int>(values_.size()) - 1;
  }
  int finish(Step step, const dn::memory::desc& dst_desc) {
    const int dst = add(dst_desc);
    step.args[DNNL_ARG_DST] = memory(dst);
    plan_.steps.push_back(std::move(step));
    return dst;
  }
  dims shape(int v) const { return desc(v).dims(); }
  dn::memory::desc desc(int v) const { return values_[v].memory.get_desc(); }
  const dn::memory& memory(int v) const { return values_[v].memory; }
  int64_t block() const { return layout_ == ftag::nChw16c ? 16 : layout_ == ftag::nChw8c ? 8 : 0; }

  // The weights in the layout the primitive chose, reordered once.
  dn::memory reordered(const at::Tensor& w, const dn::memory::desc& md) {
    dn::memory user({{w.size(0), w.size(1), w.size(2), w.size(3)}, f32, ftag::oihw}, engine_, w.data_ptr());
    dn::memory packed(md, engine_);
    dn::reorder(user, packed).execute(stream_, user, packed);
    stream_.wait();
    return packed;
  }
  dn::memory copied(const at::Tensor& b) {
    dn::memory m({{b.numel()}, f32, ftag::x}, engine_);
    std::memcpy(m.get_data_handle(), b.data_ptr<float>(), sizeof(float) * static_cast<size_t>(b.numel()));
    return m;
  }

  const dn::engine& engine_;
  dn::stream& stream_;
  ftag layout_;
  Plan& plan_;
  std::vector<Value> values_;
  int input_ = -1;
};

// The model's layers as primitives, in the order DetectionModel::forward runs them.
class ModelBuilder {
 public:
  explicit ModelBuilder(Builder& b) : b_(b) {}

  void run(const nn::DetectionModelImpl& model, const dims& input) {
    const int x = b_.input(input);
    std::vector<int> out;
    for (size_t i = 0; i < model.model->size(); ++i) {
      std::vector<int> in;
      for (int64_t j : model.layer_inputs(i)) in.push_back(j < 0 ? x : out.at(static_cast<size_t>(j)));
      const auto m = model.model->ptr(i);
      if (const auto* d = m->as<nn::DetectImpl>()) return detect(in, *d);
      out.push_back(layer(in, *m, i));
    }
    throw Unsupported("a model without a Detect layer");
  }

 private:
  int layer(const std::vector<int>& in, const torch::nn::Module& m, size_t i) {
    if (const auto* c = m.as<nn::ConvImpl>()) return b_.conv(in[0], params_of(*c));
    if (const auto* c = m.as<nn::C2fImpl>()) return c2f(in[0], *c);
    if (const auto* c = m.as<nn::SPPFImpl>()) return sppf(in[0], *c);
    if (const auto* c = m.as<nn::BottleneckImpl>()) return bottleneck(in[0], *c);
    if (const auto* c = m.as<nn::UpsampleImpl>()) return upsample(in[0], *c);
    if (const auto* c = m.as<nn::ConcatImpl>()) {
      if (c->dimension != 1) throw Unsupported("a Concat along dimension " + std::to_string(c->dimension));
      return b_.concat(in);
    }
    throw Unsupported("layer " + std::to_string(i) + " (" + m.name() + ")");
  }

  int bottleneck(int x, const nn::BottleneckImpl& m) {
    const int h = b_.conv(x, params_of(*m.cv1));
    return b_.conv(h, params_of(*m.cv2), m.add ? x : -1);
  }

  // cv1's two halves as two convolutions (the chunk), the bottlenecks on the second, one concat.
  int c2f(int x, const nn::C2fImpl& m) {
    const ConvParams cv1 = params_of(*m.cv1);
    const int64_t c = m.c;
    ConvParams first = cv1, second = cv1;
    first.weight = cv1.weight.slice(0, 0, c).contiguous();
    first.bias = cv1.bias.slice(0, 0, c).contiguous();
    second.weight = cv1.weight.slice(0, c, 2 * c).contiguous();
    second.bias = cv1.bias.slice(0, c, 2 * c).contiguous();
    std::vector<int> parts{b_.conv(x, first), b_.conv(x, second)};
    for (const auto& block : m.m->children()) parts.push_back(bottleneck(parts.back(), *block->as<nn::BottleneckImpl>()));
    return b_.conv(b_.concat(parts), params_of(*m.cv2));
  }

  int sppf(int x, const nn::SPPFImpl& m) {
    const auto& o = m.m->options;
    if ((*o.dilation())[0] != 1 || o.ceil_mode()) throw Unsupported("an SPPF pool with dilation or ceil_mode");
    std::vector<int> parts{b_.conv(x, params_of(*m.cv1))};
    for (int i = 0; i < 3; ++i) parts.push_back(b_.max_pool(parts.back(), (*o.kernel_size())[0], (*o.stride())[0], (*o.padding())[0]));
    return b_.conv(b_.concat(parts), params_of(*m.cv2));
  }

  int upsample(int x, const nn::UpsampleImpl& m) {
    const auto factor = static_cast<int64_t>(m.scale_factor);
    if (static_cast<double>(factor) != m.scale_factor || factor < 1) throw Unsupported("an Upsample by a non-integer factor");
    return b_.upsample_nearest(x, factor);
  }

  void detect(const std::vector<int>& xs, const nn::DetectImpl& d) {
    if (xs.size() != d.cv2->size()) throw Unsupported("a Detect with a different number of inputs");
    for (size_t i = 0; i < xs.size(); ++i) b_.output({branch(xs[i], *d.cv2->ptr(i)), branch(xs[i], *d.cv3->ptr(i))});
  }

  int branch(int x, const torch::nn::Module& seq) {
    const auto& s = *seq.as<torch::nn::SequentialImpl>();
    int y = b_.conv(x, params_of(*s.ptr<nn::ConvImpl>(0)));
    y = b_.conv(y, params_of(*s.ptr<nn::ConvImpl>(1)));
    return b_.conv(y, params_of(*s.ptr<torch::nn::Conv2dImpl>(2), false));
  }

  Builder& b_;
};

// The blocked layout this CPU's convolutions prefer (nChw16c with AVX-512, nChw8c with AVX2).
ftag preferred_layout(const dn::engine& engine) {
  const dims in{1, 64, 32, 32};
  const dn::convolution_forward::desc desc(dn::prop_kind::forward_inference, dn::algorithm::convolution_direct,
                                           {in, f32, ftag::any}, {{64, 64, 3, 3}, f32, ftag::any},
                                           {{64}, f32, ftag::x}, {in, f32, ftag::any}, {1, 1}, {1, 1}, {1, 1});
  const dn::memory::desc chosen = dn::convolution_forward::primitive_desc(desc, engine).dst_desc();
  for (ftag t : {ftag::nChw16c, ftag::nChw8c, ftag::nChw4c}) {
    if (chosen == dn::memory::desc(in, f32, t)) return t;
  }
  return ftag::nhwc;
}

}  // namespace

struct OnednnNet::Impl {
  nn::DetectionModel model;
  dn::engine engine{dn::engine::kind::cpu, 0};
  dn::stream stream{engine};
  ftag layout = ftag::nChw8c;
  std::map<std::array<int64_t, 2>, std::unique_ptr<Plan>> plans;

  Plan& plan_for(int64_t h, int64_t w) {
    auto& slot = plans[{h, w}];
    if (!slot) {
      if (plans.size() > 8) {  // many shapes (batches of mixed sizes): start over
        plans.clear();
        return plan_for(h, w);
      }
      auto plan = std::make_unique<Plan>();
      Builder builder(engine, stream, layout, *plan);
      ModelBuilder(builder).run(*model, {1, model->options.ch(), h, w});
      builder.allocate();
      slot = std::move(plan);
    }
    return *slot;
  }
};

OnednnNet::OnednnNet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnNet::~OnednnNet() = default;

std::unique_ptr<OnednnNet> OnednnNet::compile(const nn::DetectionModel& model, std::string& why, Layout layout) {
  auto impl = std::make_unique<Impl>();
  impl->model = model;
  try {
    switch (layout) {
      case Layout::Preferred: impl->layout = preferred_layout(impl->engine); break;
      case Layout::Blocked8: impl->layout = ftag::nChw8c; break;
      case Layout::Blocked16: impl->layout = ftag::nChw16c; break;
      case Layout::Nhwc: impl->layout = ftag::nhwc; break;
    }
    const int64_t s = model->strides().empty() ? 32 : static_cast<int64_t>(model->strides().back());
    impl->plan_for(2 * s, 2 * s);  // checks every layer once, on a small input
  } catch (const Unsupported& e) {
    why = std::string("the model has ") + e.what();
    return nullptr;
  } catch (const dn::error& e) {
    why = std::string("oneDNN refused a primitive: ") + e.what();
    return nullptr;
  }
  return std::unique_ptr<OnednnNet>(new OnednnNet(std::move(impl)));
}

at::Tensor OnednnNet::predict(const at::Tensor& x) {
  if (x.dim() != 4 || x.scalar_type() != at::kFloat || !x.device().is_cpu() || x.size(1) != impl_->model->options.ch()) {
    throw Error("OnednnNet::predict: expected a float32 CPU input [B, " + std::to_string(impl_->model->options.ch()) +
                ", H, W], got " + c10::str(x.sizes()) + " " + c10::toString(x.scalar_type()));
  }
  const int64_t s = impl_->model->strides().empty() ? 32 : static_cast<int64_t>(impl_->model->strides().back());
  if (x.size(2) % s != 0 || x.size(3) % s != 0) {
    throw Error("OnednnNet::predict: input height and width must be multiples of " + std::to_string(s));
  }
  c10::InferenceMode inference;
  at::init_num_threads();  // oneDNN's OpenMP threads: libtorch's setting, in whichever thread calls
  const at::Tensor input = x.contiguous();
  Plan& plan = impl_->plan_for(x.size(2), x.size(3));
  std::vector<at::Tensor> images;  // one image at a time: the plans are for batch 1
  for (int64_t i = 0; i < x.size(0); ++i) {
    plan.input.set_data_handle(input[i].data_ptr());
    for (auto& step : plan.steps) step.primitive.execute(impl_->stream, step.args);
    impl_->stream.wait();
    images.push_back(impl_->model->head()->decode(plan.outputs));
  }
  return images.size() == 1 ? images.front() : at::cat(images);
}

std::size_t OnednnNet::plans() const { return impl_->plans.size(); }

std::size_t OnednnNet::activation_bytes() const {
  std::size_t bytes = 0;
  for (const auto& [size, plan] : impl_->plans) {
    for (const auto& t : plan->storage) bytes += static_cast<std::size_t>(t.nbytes());
  }
  return bytes;
}

}  // namespace yolotrain::predict::detail
