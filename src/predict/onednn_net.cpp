#include "onednn_net.hpp"

#include "onednn_compat.hpp"
#include "onednn_plan.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/modules/container/sequential.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <vector>
#include <map>
#include <vector>

#include "yolotrain/error.hpp"
#include "yolotrain/nn/attention.hpp"
#include "yolotrain/torch_compat.hpp"

namespace yolotrain::predict::detail {
namespace {

ConvParams params_of(const torch::nn::Conv2dImpl& conv, bool silu) {
  const auto& o = conv.options;
  const auto* pad = torch_compat::get_if<torch::ExpandingArray<2>>(&o.padding());
  if ((*o.dilation())[0] != 1 || (*o.dilation())[1] != 1) throw Unsupported("a dilated convolution");
  if (!pad || (**pad)[0] != (**pad)[1] || (*o.kernel_size())[0] != (*o.kernel_size())[1] ||
      (*o.stride())[0] != (*o.stride())[1]) {
    throw Unsupported("a convolution with a non-square kernel, stride or padding");
  }
  if (!torch_compat::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()))
    throw Unsupported("a padding mode other than zeros");
  if (!conv.bias.defined()) throw Unsupported("a convolution without bias (BatchNorm not folded)");
  if (conv.weight.scalar_type() != at::kFloat || !conv.weight.device().is_cpu()) {
    throw Unsupported("weights that are not float32 on the CPU");
  }
  return {conv.weight, conv.bias, (*o.stride())[0], (**pad)[0], silu, o.groups()};
}

ConvParams params_of(const nn::ConvImpl& conv) {
  if (!conv.fused()) throw Unsupported("a Conv whose BatchNorm is not folded (fuse the model)");
  return params_of(*conv.conv, !conv.act.is_empty());
}

// The model's layers as primitives, in the order DetectionModel::forward runs them.
class ModelBuilder {
 public:
  explicit ModelBuilder(PlanBuilder& b) : b_(b) {}

  void run(const nn::DetectionModelImpl& model, const dims& input) {
    const int x = b_.input(input);
    std::vector<int> out;
    for (size_t i = 0; i < model.model->size(); ++i) {
      std::vector<int> in;
      for (int64_t j : model.layer_inputs(i)) in.push_back(j < 0 ? x : out.at(static_cast<size_t>(j)));
      const auto m = model.model->ptr(i);
      const std::string& kind = model.layer_kind(i).name;
      if (kind == "Detect") return detect(in, *m->as<nn::DetectImpl>());
      out.push_back(layer(in, *m, kind));
    }
    throw Unsupported("a model without a Detect layer");
  }

 private:
  // The lowering of each layer kind (nn::LayerKind::name). C2PSA (YOLO11's attention) runs as a
  // libtorch step inside the plan (docs/predict.md says why).
  int layer(const std::vector<int>& in, const torch::nn::Module& m, const std::string& kind) {
    if (kind == "Conv" || kind == "DWConv") return b_.conv(in[0], params_of(*m.as<nn::ConvImpl>()));
    if (kind == "C2f" || kind == "C3k2") return c2f(in[0], *m.as<nn::C2fImpl>());
    if (kind == "C2PSA") return c2psa(in[0], m);
    if (kind == "SPPF") return sppf(in[0], *m.as<nn::SPPFImpl>());
    if (kind == "Bottleneck") return bottleneck(in[0], *m.as<nn::BottleneckImpl>());
    if (kind == "Upsample") return upsample(in[0], *m.as<nn::UpsampleImpl>());
    if (kind == "Concat") {
      const auto* c = m.as<nn::ConcatImpl>();
      if (c->dimension != 1) throw Unsupported("a Concat along dimension " + std::to_string(c->dimension));
      return b_.concat(in);
    }
    throw Unsupported("a " + kind + " layer (not lowered to oneDNN)");
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
    first.weight = cv1.weight.slice(0, 0, c);
    first.bias = cv1.bias.slice(0, 0, c);
    second.weight = cv1.weight.slice(0, c, 2 * c);
    second.bias = cv1.bias.slice(0, c, 2 * c);
    std::vector<int> parts{b_.conv(x, first), b_.conv(x, second)};
    for (std::size_t i = 0; i < m.m->size(); ++i) {
      const auto block = m.m->ptr(i);
      if (const auto* c3k_block = block->as<nn::C3kImpl>()) parts.push_back(c3k(parts.back(), *c3k_block));
      else if (const auto* plain = block->as<nn::BottleneckImpl>()) parts.push_back(bottleneck(parts.back(), *plain));
      else parts.push_back(attention_block(parts.back(), m, i));
    }
    return b_.conv(b_.concat(parts), params_of(*m.cv2));
  }

  // YOLO26's C3k2 block with attention (Bottleneck then PSABlock): libtorch's, as C2PSA's.
  int attention_block(int x, const nn::C2fImpl& m, std::size_t i) {
    check_fused(*m.m->ptr(i));
    torch::nn::Sequential chain = m.m;
    return b_.host(x, m.c, [chain, i](const at::Tensor& t) mutable { return (chain->begin() + i)->forward(t); });
  }

  static void check_fused(const torch::nn::Module& module) {
    for (const auto& conv : module.modules()) {
      if (const auto* c = conv->as<nn::ConvImpl>(); c != nullptr && !c->fused()) {
        throw Unsupported("a Conv whose BatchNorm is not folded (fuse the model)");
      }
    }
  }

  int c3k(int x, const nn::C3kImpl& m) {
    int y = b_.conv(x, params_of(*m.cv1));
    for (const auto& block : m.m->children()) y = bottleneck(y, *block->as<nn::BottleneckImpl>());
    return b_.conv(b_.concat({y, b_.conv(x, params_of(*m.cv2))}), params_of(*m.cv3));
  }

  // The attention's matrix products over H*W positions, reshaped per head, are libtorch's: the
  // block is one step of the plan that reads and writes the plan's buffers.
  int c2psa(int x, const torch::nn::Module& m) {
    auto module = std::dynamic_pointer_cast<nn::C2PSAImpl>(const_cast<torch::nn::Module&>(m).shared_from_this());
    check_fused(*module);
    return b_.host(x, module->options.c2(), [module](const at::Tensor& t) { return module->forward(t); });
  }

  int sppf(int x, const nn::SPPFImpl& m) {
    const auto& o = m.m->options;
    if ((*o.dilation())[0] != 1 || o.ceil_mode()) throw Unsupported("an SPPF pool with dilation or ceil_mode");
    std::vector<int> parts{b_.conv(x, params_of(*m.cv1))};
    for (int64_t i = 0; i < m.options.n(); ++i)
      parts.push_back(b_.max_pool(parts.back(), (*o.kernel_size())[0], (*o.stride())[0], (*o.padding())[0]));
    const bool shortcut = m.options.shortcut() && m.options.c1() == m.options.c2();  // 8.4: + x after cv2
    return b_.conv(b_.concat(parts), params_of(*m.cv2), shortcut ? x : -1);
  }

  int upsample(int x, const nn::UpsampleImpl& m) {
    const auto factor = static_cast<int64_t>(m.scale_factor);
    if (static_cast<double>(factor) != m.scale_factor || factor < 1)
      throw Unsupported("an Upsample by a non-integer factor");
    return b_.upsample_nearest(x, factor);
  }

  // The branch that predicts: the one-to-one of an end-to-end head (YOLO26), else the only one.
  void detect(const std::vector<int>& xs, const nn::DetectImpl& d) {
    const auto& box = d.end2end() ? d.one2one_cv2 : d.cv2;
    const auto& cls = d.end2end() ? d.one2one_cv3 : d.cv3;
    if (xs.size() != box->size()) throw Unsupported("a Detect with a different number of inputs");
    for (size_t i = 0; i < xs.size(); ++i) b_.output({branch(xs[i], *box->ptr(i)), branch(xs[i], *cls->ptr(i))});
  }

  // Detect's branch: its Convs and the last Conv2d in order (YOLO11's class branch nests lists).
  int branch(int x, const torch::nn::Module& branch_module) {
    for (const auto& child : branch_module.children()) {
      if (const auto* conv = child->as<nn::ConvImpl>()) x = b_.conv(x, params_of(*conv));
      else if (const auto* last = child->as<torch::nn::Conv2dImpl>()) x = b_.conv(x, params_of(*last, false));
      else x = branch(x, *child);
    }
    return x;
  }

  PlanBuilder& b_;
};

// The layout this CPU's convolutions prefer for `type` (oneDNN 2.6: nChw8c with AVX2; nhwc with
// AVX-512, whose brgconv kernels take it).
ftag preferred_layout(const dn::engine& engine, dn::memory::data_type type) {
  const dims in{1, 64, 32, 32};
  const dn::memory::desc chosen = onednn_compat::convolution(engine, {in, type, ftag::any},
                                                              {{64, 64, 3, 3}, type, ftag::any}, {{64}, f32, ftag::x},
                                                              {in, type, ftag::any}, 1, 1)
                                       .dst_desc();
  for (ftag t : {ftag::nChw16c, ftag::nChw8c, ftag::nChw4c}) {
    if (chosen == dn::memory::desc(in, type, t)) return t;
  }
  return ftag::nhwc;
}

const char* layout_name(ftag t) {
  switch (t) {
    case ftag::nChw16c: return "nChw16c";
    case ftag::nChw8c: return "nChw8c";
    case ftag::nChw4c: return "nChw4c";
    default: return "nhwc";
  }
}

}  // namespace

struct OnednnNet::Impl {
  nn::DetectionModel model;
  dn::engine engine{dn::engine::kind::cpu, 0};
  dn::stream stream{engine};
  ftag layout = ftag::nChw8c;
  dn::memory::data_type type = f32;
  PackedWeights weights;  // shared by the plans
  at::Tensor arena;       // the activations of whichever plan runs
  struct Cached {
    std::unique_ptr<Plan> plan;
    std::uint64_t used = 0;
  };
  std::map<std::array<int64_t, 2>, Cached> plans;
  std::uint64_t calls = 0;
  // Letterboxing at one imgsz gives at most 2 * imgsz / 32 sizes (40 at 640); plans hold no
  // activations, so keeping that many is cheap. Beyond it the least recently used goes.
  static constexpr std::size_t kCapacity = 48;

  Plan& plan_for(int64_t h, int64_t w) {
    Cached& slot = plans[{h, w}];
    slot.used = ++calls;
    if (!slot.plan) {
      auto plan = std::make_unique<Plan>();
      PlanBuilder builder(engine, stream, layout, type, weights, *plan);
      ModelBuilder(builder).run(*model, {1, model->options.ch(), h, w});
      builder.finish();
      slot.plan = std::move(plan);
      if (plans.size() > kCapacity) {
        auto oldest = plans.begin();
        for (auto it = plans.begin(); it != plans.end(); ++it) {
          if (it->second.used < oldest->second.used) oldest = it;
        }
        plans.erase(oldest);
      }
    }
    Plan& plan = *slot.plan;
    if (!arena.defined() || static_cast<std::size_t>(arena.nbytes()) < plan.arena_bytes) {
      arena = at::empty({static_cast<int64_t>(plan.arena_bytes)}, at::kByte);
    }
    plan.bind(arena.data_ptr());
    return plan;
  }
};

OnednnNet::OnednnNet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnNet::~OnednnNet() = default;

bool OnednnNet::native_bf16() {
  const auto isa = static_cast<unsigned>(dn::get_effective_cpu_isa());
  const auto bf16_isa = static_cast<unsigned>(dn::cpu_isa::avx512_core_bf16);  // AMX's mask includes it
  return (isa & bf16_isa) == bf16_isa;
}

namespace {

// The layouts to try for `layout`: the one asked for; for Preferred, the probe's answer first, then
// the others. The probe asks about one plain 3x3 convolution: another of the model's layers (YOLO11's
// depthwise 3x3 under oneDNN 3.7 on an AVX-512 AMD EPYC, in nChw16c) may have no optimised kernel
// in that layout while another layout has one.
std::vector<ftag> layouts_to_try(OnednnNet::Layout layout, const dn::engine& engine, dn::memory::data_type type) {
  using Layout = OnednnNet::Layout;
  switch (layout) {
    case Layout::Blocked8: return {ftag::nChw8c};
    case Layout::Blocked16: return {ftag::nChw16c};
    case Layout::Nhwc: return {ftag::nhwc};
    case Layout::Preferred: break;
  }
  std::vector<ftag> order{preferred_layout(engine, type)};
  for (ftag t : {ftag::nhwc, ftag::nChw8c, ftag::nChw16c}) {
    if (t != order.front()) order.push_back(t);
  }
  return order;
}

}  // namespace

std::unique_ptr<OnednnNet> OnednnNet::compile(const nn::DetectionModel& model, std::string& why, Layout layout,
                                              bool bf16) {
  if (bf16 && !native_bf16()) {
    why = "this CPU has no native bfloat16 (AVX-512 BF16 or AMX): oneDNN would emulate it, slower than float32";
    return nullptr;
  }
  const dn::engine probe(dn::engine::kind::cpu, 0);
  const dn::memory::data_type type = bf16 ? detail::bf16 : f32;
  std::string first_why;  // the first layout's reason, if none runs
  for (ftag t : layouts_to_try(layout, probe, type)) {
    auto impl = std::make_unique<Impl>();
    impl->model = model;
    impl->type = type;
    impl->layout = t;
    try {
      const int64_t s = model->max_stride();
      impl->plan_for(2 * s, 2 * s);  // checks every layer once, on a small input
      return std::unique_ptr<OnednnNet>(new OnednnNet(std::move(impl)));
    } catch (const Unsupported& e) {
      if (first_why.empty()) first_why = std::string("the model has ") + e.what();
    } catch (const dn::error& e) {
      if (first_why.empty()) first_why = std::string("oneDNN refused a primitive: ") + e.what();
    }
  }
  why = first_why;
  return nullptr;
}

at::Tensor OnednnNet::predict(const at::Tensor& x) {
  if (x.dim() != 4 || x.scalar_type() != at::kFloat || !x.device().is_cpu() ||
      x.size(1) != impl_->model->options.ch()) {
    throw Error("OnednnNet::predict: expected a float32 CPU input [B, " + std::to_string(impl_->model->options.ch()) +
                ", H, W], got " + c10::str(x.sizes()) + " " + c10::toString(x.scalar_type()));
  }
  const int64_t s = impl_->model->max_stride();
  if (x.size(2) % s != 0 || x.size(3) % s != 0) {
    throw Error("OnednnNet::predict: input height and width must be multiples of " + std::to_string(s));
  }
  c10::InferenceMode inference;
  // oneDNN's OpenMP threads follow libtorch's setting in whichever thread calls, set once per thread
  // as at::parallel_for does: at::init_num_threads() on every call would also re-create libtorch's
  // pthreadpool, whose new threads spin and, with as many OpenMP threads as cores, stalled the
  // first primitives of a forward by a scheduler tick or two (docs/predict.md).
  at::internal::lazy_init_num_threads();
  const at::Tensor input =
      x.contiguous(impl_->layout == ftag::nhwc ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::Contiguous);
  Plan& plan = impl_->plan_for(x.size(2), x.size(3));
  std::vector<at::Tensor> images;  // one image at a time: the plans are for batch 1
  for (int64_t i = 0; i < x.size(0); ++i) {
    nn::Detect head = impl_->model->head();  // the plan ran the branch that predicts (detect())
    std::vector<at::Tensor> raw = plan.run(impl_->stream, input[i].data_ptr());
    nn::HeadOutputs outputs;
    outputs.one2one = std::move(raw);
    images.push_back(head->end2end() ? head->inference(outputs) : head->decode(outputs.one2one));
  }
  return images.size() == 1 ? images.front() : at::cat(images);
}

std::size_t OnednnNet::plans() const { return impl_->plans.size(); }

std::string OnednnNet::label() const {
  return std::string("oneDNN ") + layout_name(impl_->layout) + (impl_->type == f32 ? "" : " bf16");
}

std::size_t OnednnNet::activation_bytes() const {
  return impl_->arena.defined() ? static_cast<std::size_t>(impl_->arena.nbytes()) : 0;
}

}  // namespace yolotrain::predict::detail
