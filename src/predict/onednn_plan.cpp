#include "onednn_plan.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "arena_layout.hpp"
#include "onednn_compat.hpp"

namespace yolotrain::predict::detail {
namespace {

// oneDNN answers a layout or shape its optimised kernels do not take with its reference kernel
// (nChw16c on an AVX2 CPU: 18 s for a 640 forward instead of 50 ms). Refused, so the caller runs
// libtorch's forward instead.
void refuse_reference_kernel(const dn::primitive_desc_base& pd, const std::string& what) {
  const std::string impl = pd.impl_info_str();
  if (impl.rfind("ref", 0) == 0) {
    throw Unsupported(what + " that oneDNN runs only with its reference kernel (" + impl +
                      ") in this layout on this CPU: hundreds of times slower");
  }
}

// A value's memory seen as an NCHW tensor of its own data type: a view for nchw and nhwc; for the
// blocked layouts ([N, C/b, H, W, b], channels padded to the block) a view with the padding.
at::Tensor nchw_view(const dn::memory& m, ftag layout, dn::memory::data_type type) {
  const dims d = onednn_compat::dims_of(m.get_desc());
  const auto scalar = type == f32 ? at::kFloat : at::kBFloat16;
  void* data = m.get_data_handle();
  if (layout == ftag::nchw) return at::from_blob(data, {d[0], d[1], d[2], d[3]}, scalar);
  if (layout == ftag::nhwc) return at::from_blob(data, {d[0], d[2], d[3], d[1]}, scalar).permute({0, 3, 1, 2});
  const int64_t b = layout == ftag::nChw16c ? 16 : layout == ftag::nChw8c ? 8 : 4;
  const int64_t blocks = (d[1] + b - 1) / b;
  return at::from_blob(data, {d[0], blocks, d[2], d[3], b}, scalar).permute({0, 1, 4, 2, 3});  // [N, C/b, b, H, W]
}

at::Tensor to_nchw(const dn::memory& m, ftag layout, dn::memory::data_type type) {
  at::Tensor v = nchw_view(m, layout, type);
  if (v.dim() == 5) {
    const int64_t channels = onednn_compat::dims_of(m.get_desc())[1];
    v = v.reshape({v.size(0), v.size(1) * v.size(2), v.size(3), v.size(4)}).slice(1, 0, channels);
  }
  return v.to(at::kFloat);
}

void from_nchw(const at::Tensor& t, const dn::memory& m, ftag layout, dn::memory::data_type type) {
  at::Tensor v = nchw_view(m, layout, type);
  if (v.dim() == 4) {
    v.copy_(t);
    return;
  }
  at::Tensor padded = at::zeros({t.size(0), v.size(1) * v.size(2), t.size(2), t.size(3)}, t.options());
  padded.slice(1, 0, t.size(1)).copy_(t);  // blocked layouts keep their padding channels zero
  v.copy_(padded.view(v.sizes()));
}

}  // namespace

void Plan::bind(void* arena) {
  if (bound == arena) return;
  for (auto& [memory, offset] : bindings) memory.set_data_handle(static_cast<std::uint8_t*>(arena) + offset);
  bound = arena;
}

std::vector<at::Tensor> Plan::run(dn::stream& stream, void* image) {
  input.set_data_handle(image);
  for (auto& step : steps) {
    if (step.host) {
      stream.wait();
      step.host(step.args);
    } else {
      step.primitive.execute(stream, step.args);
    }
  }
  stream.wait();
  std::vector<at::Tensor> levels;
  for (const auto& o : outputs)
    levels.push_back(at::from_blob(static_cast<std::uint8_t*>(bound) + o.offset, o.sizes, at::kFloat));
  return levels;
}

dn::memory PackedWeights::get(const at::Tensor& t, const dn::memory::desc& md, const dn::engine& engine,
                              dn::stream& stream) {
  auto& variants = packed_[t.data_ptr()];
  for (const auto& m : variants) {
    if (m.get_desc() == md) return m;
  }
  const at::Tensor c = t.contiguous();
  const dims d = onednn_compat::dims_of(md);  // grouped weights: goihw, the same bytes as the tensor's oihw
  const dn::memory::desc plain = c.dim() != 4 ? dn::memory::desc({c.numel()}, f32, ftag::x)
                                 : d.size() == 5
                                     ? dn::memory::desc(d, f32, ftag::goihw)
                                     : dn::memory::desc({c.size(0), c.size(1), c.size(2), c.size(3)}, f32, ftag::oihw);
  dn::memory user(plain, engine, c.data_ptr());
  dn::memory packed(md, engine);
  dn::reorder(user, packed).execute(stream, user, packed);
  stream.wait();
  variants.push_back(packed);
  return packed;
}

int PlanBuilder::input(const dims& nchw) {
  const ftag tag = layout_ == ftag::nhwc ? ftag::nhwc : ftag::nchw;
  input_ = add({nchw, f32, tag});
  plan_.input = values_.back().memory;
  if (type_ == f32) return input_;
  const dn::memory::desc converted(nchw, type_, tag);
  const dn::reorder::primitive_desc pd(engine_, desc(input_), engine_, converted);
  return append({dn::reorder(pd), {{DNNL_ARG_FROM, read(input_)}}}, converted);
}

int PlanBuilder::conv(int src, const ConvParams& p, int residual) {
  const dims in = shape(src);
  const int64_t oc = p.weight.size(0), k = p.weight.size(2), g = p.groups;
  if (p.weight.size(1) * g != in[1]) throw Unsupported("a convolution whose input channels do not match its weights");
  const dims weights = g == 1 ? dims{oc, in[1], k, k} : dims{g, oc / g, in[1] / g, k, k};
  const dims out{in[0], oc, (in[2] + 2 * p.pad - k) / p.stride + 1, (in[3] + 2 * p.pad - k) / p.stride + 1};
  dn::post_ops ops;
  if (p.silu) onednn_compat::append_silu(ops);
  if (residual >= 0) ops.append_binary(dn::algorithm::binary_add, desc(residual));
  dn::primitive_attr attr;
  attr.set_post_ops(ops);
  const auto pd = onednn_compat::convolution(engine_, desc(src), {weights, type_, ftag::any}, {{oc}, f32, ftag::x},
                                             {out, type_, layout_}, p.stride, p.pad, attr);
  refuse_reference_kernel(pd, "a " + std::to_string(k) + "x" + std::to_string(k) + " convolution");
  Step step{dn::convolution_forward(pd), {}};
  step.args[DNNL_ARG_SRC] = read(src);
  step.args[DNNL_ARG_WEIGHTS] = weights_.get(p.weight, pd.weights_desc(), engine_, stream_);
  step.args[DNNL_ARG_BIAS] = weights_.get(p.bias, pd.bias_desc(), engine_, stream_);
  if (residual >= 0) step.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.silu ? 1 : 0) | DNNL_ARG_SRC_1] = read(residual);
  return append(std::move(step), pd.dst_desc());
}

int PlanBuilder::concat(const std::vector<int>& srcs) {
  dims out = shape(srcs.front());
  out[1] = 0;
  std::vector<dn::memory::desc> mds;
  bool in_place = out[0] == 1 && block() > 0;
  for (int v : srcs) {
    const dims d = shape(v);
    if (d[0] != out[0] || d[2] != out[2] || d[3] != out[3]) throw Unsupported("a Concat of differently sized maps");
    out[1] += d[1];
    mds.push_back(desc(v));
    const Value& value = values_[static_cast<std::size_t>(v)];
    in_place = in_place && v != input_ && value.part_of < 0 && d[1] % block() == 0 &&
               desc(v) == dn::memory::desc(d, type_, layout_);
  }
  if (in_place) {
    const int dst = add({out, type_, layout_});
    std::size_t offset = 0;
    for (int v : srcs) {
      Value& value = values_[static_cast<std::size_t>(v)];
      value.part_of = dst;
      value.offset = offset;
      offset += value.memory.get_desc().get_size();
    }
    return dst;
  }
  const auto pd = onednn_compat::concat(engine_, {out, type_, layout_}, 1, mds);
  Step step{dn::concat(pd), {}};
  for (size_t i = 0; i < srcs.size(); ++i) step.args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = read(srcs[i]);
  return append(std::move(step), pd.dst_desc());
}

int PlanBuilder::max_pool(int src, int64_t k, int64_t stride, int64_t pad) {
  const dims in = shape(src);
  const dims out{in[0], in[1], (in[2] + 2 * pad - k) / stride + 1, (in[3] + 2 * pad - k) / stride + 1};
  const auto pd = onednn_compat::max_pool(engine_, desc(src), {out, type_, layout_}, k, stride, pad);
  refuse_reference_kernel(pd, "a max pool");
  return append({dn::pooling_forward(pd), {{DNNL_ARG_SRC, read(src)}}}, pd.dst_desc());
}

int PlanBuilder::upsample_nearest(int src, int64_t factor) {
  const dims in = shape(src);
  const dims out{in[0], in[1], in[2] * factor, in[3] * factor};
  const auto pd = onednn_compat::nearest(engine_, desc(src), {out, type_, layout_});
  refuse_reference_kernel(pd, "an upsample");
  return append({dn::resampling_forward(pd), {{DNNL_ARG_SRC, read(src)}}}, pd.dst_desc());
}

int PlanBuilder::host(int src, int64_t out_channels, std::function<at::Tensor(const at::Tensor&)> fn) {
  dims out = shape(src);
  out[1] = out_channels;
  Step step;
  step.args[DNNL_ARG_SRC] = read(src);
  step.host = [fn = std::move(fn), layout = layout_, type = type_](const std::unordered_map<int, dn::memory>& args) {
    from_nchw(fn(to_nchw(args.at(DNNL_ARG_SRC), layout, type)), args.at(DNNL_ARG_DST), layout, type);
  };
  return append(std::move(step), {out, type_, layout_});
}

void PlanBuilder::output(const std::vector<int>& srcs) {
  dims out = shape(srcs.front());
  out[1] = 0;
  for (int v : srcs) out[1] += shape(v)[1];
  const dn::memory::desc whole(out, f32, ftag::nchw);
  const int level = add(whole);
  values_.back().first = static_cast<int>(plan_.steps.size());
  values_.back().output = true;
  int64_t channel = 0;
  for (int v : srcs) {
    const dims part = shape(v);
    // A channel slice of the level: the sub-memory's descriptor carries the offset, its data
    // handle is the level's start.
    const dn::memory dst(whole.submemory_desc(part, {0, channel, 0, 0}), engine_, DNNL_MEMORY_NONE);
    views_.emplace_back(dst, level);
    const dn::memory& from = read(v);
    plan_.steps.push_back({dn::reorder(from, dst), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, dst}}});
    channel += part[1];
  }
  outputs_.push_back(level);
  plan_.outputs.push_back({out, 0});
}

void PlanBuilder::finish() {
  // One buffer per value that is no Concat's part; a part lives inside its (outermost) Concat's.
  std::vector<int> buffer(values_.size(), -1);
  std::vector<BufferLife> lives;
  const auto root = [&](int v, std::size_t& offset) {
    offset = 0;
    while (values_[static_cast<std::size_t>(v)].part_of >= 0) {
      offset += values_[static_cast<std::size_t>(v)].offset;
      v = values_[static_cast<std::size_t>(v)].part_of;
    }
    return v;
  };
  for (std::size_t v = 0; v < values_.size(); ++v) {
    if (static_cast<int>(v) == input_ || values_[v].part_of >= 0) continue;
    buffer[v] = static_cast<int>(lives.size());
    lives.push_back({values_[v].memory.get_desc().get_size(), values_[v].first, values_[v].last});
  }
  for (std::size_t v = 0; v < values_.size(); ++v) {
    if (static_cast<int>(v) == input_) continue;
    std::size_t offset = 0;
    BufferLife& life =
        lives[static_cast<std::size_t>(buffer[static_cast<std::size_t>(root(static_cast<int>(v), offset))])];
    for (const int step : {values_[v].first, values_[v].last}) {
      if (step < 0) continue;
      life.first = life.first < 0 ? step : std::min(life.first, step);
      life.last = std::max(life.last, step);
    }
  }
  const int end = static_cast<int>(plan_.steps.size());  // the outputs are read after the steps
  for (std::size_t v = 0; v < values_.size(); ++v) {
    if (values_[v].output) lives[static_cast<std::size_t>(buffer[v])].last = end;
  }
  for (auto& life : lives) life.last = std::max(life.last, life.first);
  const ArenaLayout layout = layout_arena(lives);
  for (std::size_t v = 0; v < values_.size(); ++v) {
    if (static_cast<int>(v) == input_) continue;
    std::size_t offset = 0;
    const int r = root(static_cast<int>(v), offset);
    plan_.bindings.emplace_back(values_[v].memory,
                                layout.offsets[static_cast<std::size_t>(buffer[static_cast<std::size_t>(r)])] + offset);
  }
  for (const auto& [memory, v] : views_) {
    plan_.bindings.emplace_back(memory, layout.offsets[static_cast<std::size_t>(buffer[static_cast<std::size_t>(v)])]);
  }
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    plan_.outputs[i].offset = layout.offsets[static_cast<std::size_t>(buffer[static_cast<std::size_t>(outputs_[i])])];
  }
  plan_.arena_bytes = layout.bytes;
}

int PlanBuilder::add(const dn::memory::desc& md) {
  values_.push_back({dn::memory(md, engine_, DNNL_MEMORY_NONE)});
  return static_cast<int>(values_.size()) - 1;
}

int PlanBuilder::append(Step step, const dn::memory::desc& dst_desc) {
  const int dst = add(dst_desc);
  values_.back().first = static_cast<int>(plan_.steps.size());
  step.args[DNNL_ARG_DST] = values_.back().memory;
  plan_.steps.push_back(std::move(step));
  return dst;
}

const dn::memory& PlanBuilder::read(int v) {
  Value& value = values_[static_cast<std::size_t>(v)];
  value.last = static_cast<int>(plan_.steps.size());  // the step being built
  return value.memory;
}

int64_t PlanBuilder::block() const {
  return layout_ == ftag::nChw16c ? 16 : layout_ == ftag::nChw8c ? 8 : 0;
}

}  // namespace yolotrain::predict::detail
