// The building blocks on their own.
#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>

#include "yolotrain/nn.hpp"
#include "yolotrain/torch_compat.hpp"

#include "catch.hpp"

namespace nn = yolotrain::nn;

TEST_CASE("Conv is conv then BN then SiLU with same padding", "[nn]") {
  nn::Conv conv(nn::ConvOptions(3, 8, 3, 2));
  CHECK(yolotrain::torch_compat::get<torch::ExpandingArray<2>>(conv->conv->options.padding())->at(0) == 1);
  CHECK_FALSE(conv->conv->bias.defined());
  conv->eval();
  const at::Tensor x = at::randn({1, 3, 10, 14});
  const at::Tensor y = conv->forward(x);
  CHECK(y.sizes() == at::IntArrayRef({1, 8, 5, 7}));
  const at::Tensor ref = at::silu(conv->bn->forward(conv->conv->forward(x)));
  CHECK(y.equal(ref));
}

TEST_CASE("C2f has 2+n chunks and residuals only with shortcut", "[nn]") {
  nn::C2f c2f(nn::C2fOptions(32, 64).n(2).shortcut(true));
  CHECK(c2f->c == 32);
  CHECK(c2f->cv1->conv->weight.sizes() == at::IntArrayRef({64, 32, 1, 1}));
  CHECK(c2f->cv2->conv->weight.sizes() == at::IntArrayRef({64, 4 * 32, 1, 1}));
  CHECK(c2f->m->size() == 2);
  CHECK(c2f->m[0]->as<nn::BottleneckImpl>()->add);
  nn::C2f head(nn::C2fOptions(32, 64).n(1));
  CHECK_FALSE(head->m[0]->as<nn::BottleneckImpl>()->add);
  CHECK(c2f->forward(at::randn({2, 32, 8, 6})).sizes() == at::IntArrayRef({2, 64, 8, 6}));
  nn::Bottleneck widen(nn::BottleneckOptions(16, 32));
  CHECK_FALSE(widen->add);
}

TEST_CASE("SPPF pools three times in a row", "[nn]") {
  nn::SPPF sppf(nn::SPPFOptions(16, 24));
  CHECK(sppf->cv1->conv->weight.sizes() == at::IntArrayRef({8, 16, 1, 1}));
  CHECK(sppf->cv2->conv->weight.sizes() == at::IntArrayRef({24, 32, 1, 1}));
  CHECK(sppf->forward(at::randn({1, 16, 5, 7})).sizes() == at::IntArrayRef({1, 24, 5, 7}));
}

TEST_CASE("DFL is the softmax expectation over 16 side-major bins", "[nn]") {
  nn::DFL dfl(16);
  at::Tensor logits = at::full({1, 64, 1}, -1e4);
  logits.index_put_({0, 0 * 16 + 3, 0}, 10.0);  // l = 3
  logits.index_put_({0, 1 * 16 + 0, 0}, 10.0);  // t = 0
  logits.index_put_({0, 2 * 16 + 15, 0}, 10.0);  // r = 15
  logits.index_put_({0, 3 * 16 + 7, 0}, 10.0);   // b = 7
  const at::Tensor d = dfl->forward(logits);
  CHECK(d.sizes() == at::IntArrayRef({1, 4, 1}));
  CHECK(at::allclose(d.flatten(), at::tensor({3.0f, 0.0f, 15.0f, 7.0f}), 1e-4, 1e-4));
  const at::Tensor uniform = dfl->forward(at::zeros({1, 64, 1}));
  CHECK(at::allclose(uniform.flatten(), at::full({4}, 7.5f)));
}

TEST_CASE("make_anchors lists cell centres row-major level by level", "[nn]") {
  const auto [anchors, strides] = nn::make_anchors({at::zeros({1, 1, 2, 3}), at::zeros({1, 1, 1, 2})}, {8, 16});
  CHECK(anchors.sizes() == at::IntArrayRef({8, 2}));
  CHECK(anchors[1].equal(at::tensor({1.5f, 0.5f})));
  CHECK(anchors[3].equal(at::tensor({0.5f, 1.5f})));
  CHECK(anchors[7].equal(at::tensor({1.5f, 0.5f})));
  CHECK(strides.flatten().equal(at::tensor({8.f, 8.f, 8.f, 8.f, 8.f, 8.f, 16.f, 16.f})));
  const at::Tensor dist = at::tensor({1.f, 2.f, 3.f, 4.f}).view({1, 4});
  const at::Tensor anchor = at::tensor({10.f, 20.f}).view({1, 2});
  CHECK(nn::dist2bbox(dist, anchor, true).equal(at::tensor({11.f, 21.f, 4.f, 6.f}).view({1, 4})));
  CHECK(nn::dist2bbox(dist, anchor, false).equal(at::tensor({9.f, 18.f, 13.f, 24.f}).view({1, 4})));
}

TEST_CASE("channels_last weights give the same outputs as contiguous ones", "[nn]") {
  nn::C2f block(nn::C2fOptions(8, 16).n(1).shortcut(true));
  block->eval();
  const at::Tensor x = at::randn({2, 8, 6, 10});
  const at::Tensor ref = block->forward(x);
  nn::set_memory_format(*block, at::MemoryFormat::ChannelsLast);
  CHECK(block->cv1->conv->weight.is_contiguous(at::MemoryFormat::ChannelsLast));
  const at::Tensor y = block->forward(x.contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(at::allclose(y, ref, 1e-4, 1e-5));
  nn::set_memory_format(*block, nn::preferred_cpu_memory_format());
  CHECK(block->cv1->conv->weight.is_contiguous(nn::preferred_cpu_memory_format()));
}

TEST_CASE("a training forward adds one to every BatchNorm's batch count, alone or in a model", "[nn]") {
  nn::Conv alone(nn::ConvOptions(3, 4, 3, 1));
  alone->train();
  (void)alone->forward(at::rand({2, 3, 8, 8}));
  CHECK(alone->bn->num_batches_tracked.item<int64_t>() == 1);  // BatchNorm2d's own count

  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  std::vector<std::int64_t> before;
  std::vector<const torch::nn::BatchNorm2dImpl*> norms;
  for (const auto& m : model->modules(false)) {
    if (const auto* bn = m->as<torch::nn::BatchNorm2dImpl>()) {
      norms.push_back(bn);
      before.push_back(bn->num_batches_tracked.item<int64_t>());
    }
  }
  REQUIRE(norms.size() == 57);
  model->train();
  (void)model->forward_heads(at::rand({1, 3, 64, 64}));
  model->eval();
  (void)model->forward_heads(at::rand({1, 3, 64, 64}));  // eval: no count
  for (std::size_t i = 0; i < norms.size(); ++i) CHECK(norms[i]->num_batches_tracked.item<int64_t>() == before[i] + 1);
}
