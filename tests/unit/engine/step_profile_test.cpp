// The step profile: the operator counter counts what a GPU would be asked to do, and the training
// step of yolov8n, yolo26n and yolov8n-seg (the step CUDA runs, device_step=true) stays within its budgets:
// no sync-forcing or data-dependent-shape operator, and at most a quarter of the operators the
// step dispatched before the budgets (docs/performance.md "The step profile").
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include "yolotrain/engine/step_profile.hpp"

#include "catch.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "test_support.hpp"

namespace en = yolotrain::engine;
namespace fs = std::filesystem;

TEST_CASE("the operator counter counts top-level operators and each sync once", "[engine][step-profile]") {
  const at::Tensor a = at::rand({8}), b = at::rand({8});
  en::OperatorCounter counter;
  (void)counter.take();  // nothing before
  const at::Tensor c = a + b;
  en::OperatorCounts counts = counter.take();
  CHECK(counts.operators == 1);
  CHECK(counts.by_name["aten::add"] == 1);
  CHECK(counts.sync_count() == 0);

  (void)c.sum().item<float>();  // .item(): aten::item, not also the _local_scalar_dense inside
  counts = counter.take();
  CHECK(counts.sync_count() == 1);
  CHECK(counts.syncs["aten::item"] == 1);

  (void)c.index({c > 0.5});  // a boolean mask: nonzero inside, counted once as the index
  counts = counter.take();
  CHECK(counts.sync_count() == 1);
  CHECK(counts.syncs["aten::index (bool mask)"] == 1);

  (void)c.nonzero();
  (void)at::_unique2(c);
  counts = counter.take();
  CHECK(counts.syncs["aten::nonzero"] == 1);
  CHECK(counts.syncs["aten::_unique2"] == 1);

  (void)c.index({at::tensor({0, 2}, at::kLong)});  // an integer index: a fixed shape, no sync
  CHECK(counter.take().sync_count() == 0);
}

TEST_CASE("reads inside a cadence read scope are the cadence's, not a step's syncs", "[engine][step-profile]") {
  const at::Tensor a = at::rand({4});
  en::OperatorCounter counter;
  {
    RECORD_FUNCTION("yolotrain::cadence_read", std::vector<c10::IValue>());
    (void)a.sum().item<float>();
  }
  const en::OperatorCounts counts = counter.take();
  CHECK(counts.cadence_reads == 1);
  CHECK(counts.sync_count() == 0);
  CHECK(counts.operators == 2);  // aten::sum, aten::item: dispatched all the same
}

TEST_CASE("one operator counter at a time", "[engine][step-profile]") {
  en::OperatorCounter counter;
  CHECK_THROWS_WITH(en::OperatorCounter(), Catch::Contains("one counts at a time"));
}

TEST_CASE("the counter sees the backward pass's operators", "[engine][step-profile]") {
  const at::Tensor w = at::rand({4}).requires_grad_(true);
  en::OperatorCounter counter;
  (w * 2).sum().backward();
  const en::OperatorCounts counts = counter.take();
  CHECK(counts.operators >= 4);  // mul, sum, and the backward's own
  CHECK(counts.sync_count() == 0);
}

namespace {

// The profile of `model` on `dataset` (real data: coco128, coco128-seg) at imgsz 64, batch 16, an
// optimizer step every step, the step CUDA runs; nothing (after saying so) without ../shared.
std::optional<en::StepProfile> profile_of(const std::string& model, const std::string& dataset,
                                          const yolotrain::test::TempDir& tmp) {
  const fs::path data = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / dataset / "data.yaml";
  if (!fs::exists(data)) {
    WARN("skipped: " << data.string() << " is absent");
    return std::nullopt;
  }
  const en::TrainConfig cfg = en::TrainConfig::from_args(
      {"model=" + model, "data=" + data.string(), "imgsz=64", "batch=16", "nbs=16", "device_step=true", "epochs=10",
       "val=false", "plots=false", "save_interval=0", "workers=2", "device=cpu", "verbose=false",
       "project=" + tmp.path().string(), "name=run"});
  return en::profile_training_steps(cfg, /*warmup=*/1, /*steps=*/3);  // inside the first epoch (7 batches)
}

}  // namespace

// Budgets: no sync, and at most a quarter of the operators of the step before the multi-tensor
// updates and static shapes (docs/performance.md "The step profile": 4,556, 9,072 and 6,172).
TEST_CASE("the training step of yolov8n, yolo26n and yolov8n-seg stays within its budgets", "[engine][step-profile]") {
  struct Budget {
    std::string model, dataset;
    double operators;
  };
  for (const Budget& b : {Budget{"yolov8n.yaml", "coco128", 4556.0 / 4}, Budget{"yolo26n.yaml", "coco128", 9072.0 / 4},
                          Budget{"yolov8n-seg.yaml", "coco128-seg", 6172.0 / 4}}) {
    INFO(b.model);
    yolotrain::test::TempDir tmp;
    const std::optional<en::StepProfile> p = profile_of(b.model, b.dataset, tmp);
    if (!p) return;
    INFO(p->total().summary());
    CHECK(p->steps.size() == 3);
    CHECK(p->max_syncs_in_a_step() == 0);
    CHECK(p->operators_per_step() <= b.operators);
  }
}

TEST_CASE("a run that ends before the profiled steps says so", "[engine][step-profile]") {
  const fs::path data = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / "coco8" / "data.yaml";
  if (!fs::exists(data)) {
    WARN("skipped: " << data.string() << " is absent");
    return;
  }
  yolotrain::test::TempDir tmp;
  const en::TrainConfig cfg = en::TrainConfig::from_args(
      {"model=yolov8n.yaml", "data=" + data.string(), "imgsz=64", "batch=16", "epochs=2", "val=false", "plots=false",
       "device=cpu", "verbose=false", "workers=1", "project=" + tmp.path().string(), "name=run"});
  CHECK_THROWS_WITH(en::profile_training_steps(cfg, 1, 5), Catch::Contains("before 1 + 5 were counted"));
}
