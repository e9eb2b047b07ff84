// cuda_graph=: which runs graph their steps and why not (one line, or exit 2 for true), and a
// GraphedStep off CUDA stepping eagerly as the trainer's own step does. Capture and replay on a GPU:
// tests/unit/cuda/cuda_paths_test.cpp.
#include <ATen/ATen.h>

#include "graphed_step.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/error.hpp"

#include "catch.hpp"

namespace en = yolotrain::engine;

namespace graphed_test {

en::GraphFacts cuda_run(const std::string& arg) {
  en::GraphFacts f;
  f.arg = arg;
  f.cuda = true;
  f.built_with_cuda = true;
  return f;
}

}  // namespace graphed_test

TEST_CASE("cuda_graph=auto graphs a CUDA detection or segmentation run and says why not elsewhere", "[engine]") {
  CHECK(en::plan_cuda_graph(graphed_test::cuda_run("auto")).on);
  CHECK(en::plan_cuda_graph(graphed_test::cuda_run("true")).on);
  en::GraphFacts f = graphed_test::cuda_run("auto");
  f.cuda = false;
  CHECK(en::plan_cuda_graph(f).reason == "the run is not on a CUDA device");
  f = graphed_test::cuda_run("auto");
  f.multi_scale = true;
  CHECK(en::plan_cuda_graph(f).reason == "multi_scale changes the image size every step");
  f = graphed_test::cuda_run("auto");
  f.task_reason = "only the detection and segmentation losses have a step without host reads";
  CHECK_FALSE(en::plan_cuda_graph(f).on);
  CHECK(en::plan_cuda_graph(f).reason == f.task_reason);
  f.arg = "false";
  CHECK(en::plan_cuda_graph(f).reason == "cuda_graph=false");
  CHECK_FALSE(en::plan_cuda_graph(graphed_test::cuda_run("false")).on);
}

TEST_CASE("cuda_graph=true where a graph cannot be used is an error naming why", "[engine]") {
  en::GraphFacts f = graphed_test::cuda_run("true");
  f.cuda = false;
  CHECK_THROWS_AS(en::plan_cuda_graph(f), yolotrain::ConfigError);
  CHECK_THROWS_WITH(en::plan_cuda_graph(f), Catch::Contains("cuda_graph=true: the run is not on a CUDA device; use "
                                                            "cuda_graph=auto"));
  f = graphed_test::cuda_run("true");
  f.built_with_cuda = false;
  CHECK_THROWS_WITH(en::plan_cuda_graph(f), Catch::Contains("built without its CUDA code"));
}

TEST_CASE("cuda_graph= is auto by default and takes auto, true, false", "[engine]") {
  CHECK(en::TrainConfig{}.cuda_graph == "auto");
  CHECK(en::TrainConfig::from_args({"cuda_graph=False"}).cuda_graph == "false");
  CHECK(en::TrainConfig::from_args({"cuda_graph=None"}).cuda_graph == "false");
  CHECK(en::TrainConfig::from_args({"cuda_graph=true"}).cuda_graph == "true");
  CHECK_THROWS_WITH(en::TrainConfig::from_args({"cuda_graph=always"}), Catch::Contains("auto, true, false"));
}

TEST_CASE("a GraphedStep off CUDA steps eagerly, its gradients added to those there", "[engine]") {
  const at::Tensor w = at::ones({3}).requires_grad_(true);
  en::GraphedStep graphed({w}, /*eager_steps=*/0);  // would capture at once on CUDA
  const auto step = [&](const at::Tensor& x, const yolotrain::data::Batch&) -> en::GraphedStep::Output {
    const at::Tensor loss = (w * x).sum();
    return {loss * 2, loss.detach().view({1})};
  };
  yolotrain::data::Batch batch;
  for (int i = 0; i < 2; ++i) {
    const at::Tensor items = graphed.run(at::full({3}, double(i + 1)), batch, step);
    CHECK(items.item<double>() == Approx(3.0 * (i + 1)));
  }
  CHECK(at::equal(w.grad(), at::full({3}, 2.0 * (1 + 2))));  // accumulated as two backward passes
  CHECK(graphed.graphs() == 0);
  CHECK(graphed.disabled().empty());
}
