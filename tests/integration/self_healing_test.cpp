// Ultralytics 8.4's self-healing, made exact: a NaN loss at step k rolls the run back to its newest
// checkpoint (or to its start) and the replay ends byte-identical to a run without the fault; a
// fault that persists fails the run after 3 roll-backs, with the reason. The faults come from the
// trainer's test-only seam (src/engine/fault_injection.hpp), in-process.
#include <ATen/ATen.h>

#include "fault_injection.hpp"
#include "yolotrain/engine/trainer.hpp"

#include "catch.hpp"

#include "test_support.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
namespace en = yolotrain::engine;
using yt::baseline;
using yt::weights_of;
using yt::train_args;

namespace {

en::TrainConfig healing_config(const fs::path& project) {
  auto args = train_args(project);
  args.erase(args.begin());  // the program path
  return en::TrainConfig::from_args(args);
}

}  // namespace

TEST_CASE("a NaN loss rolls the run back and the replay ends byte-identical", "[integration][self-healing]") {
  // Step 2: before any checkpoint (back to the run's start); step 5: back to epoch 1's end (step 4).
  for (const std::int64_t step : {2, 5}) {
    INFO("NaN at step " << step);
    yt::TempDir tmp;
    en::testing::inject_nonfinite_loss(step);
    yolotrain::lifecycle::ControlToken token;
    const en::RunResult r = en::Trainer(healing_config(tmp.path())).run(token);
    en::testing::clear_faults();
    CHECK(r.outcome == en::RunOutcome::Completed);
    const std::string log = yt::slurp(tmp / "run" / "train.log");
    CHECK_THAT(log, Catch::Contains("the loss was NaN/Inf at step " + std::to_string(step)) &&
                        Catch::Contains(step == 2 ? "rolling back to step 0" : "rolling back to step 4"));
    CHECK(weights_of(tmp / "run") == baseline());
  }
}

TEST_CASE("a NaN that persists fails the run after 3 roll-backs, with the reason", "[integration][self-healing]") {
  yt::TempDir tmp;
  en::testing::inject_nonfinite_loss(5, 4);
  yolotrain::lifecycle::ControlToken token;
  const en::RunResult r = en::Trainer(healing_config(tmp.path())).run(token);
  en::testing::clear_faults();
  CHECK(r.outcome == en::RunOutcome::Failed);
  CHECK_THAT(r.reason, Catch::Contains("3 roll-backs did not help") && Catch::Contains("lr0"));
  CHECK(r.exit_code() == 1);
}

// Ultralytics 8.4's first-epoch out-of-memory retry: the run starts again in its folder with half
// the batch and ends as a run begun with that batch would; a stop afterwards resumes exactly.
TEST_CASE("an out-of-memory error in the first epoch restarts the run with half the batch",
          "[integration][self-healing]") {
  yt::TempDir tmp;
  auto with_batch = [&](const fs::path& project, const std::string& batch) {
    en::TrainConfig c = healing_config(project);
    c.set("batch", batch);
    return c;
  };
  yolotrain::lifecycle::ControlToken token;
  const en::RunResult halved_from_start = en::Trainer(with_batch(tmp / "b2", "2")).run(token);
  REQUIRE(halved_from_start.outcome == en::RunOutcome::Completed);

  en::testing::inject_out_of_memory(1);
  en::TrainerCallbacks cb;
  cb.on_batch_end = [&](const en::TrainerProgress& p) {
    if (p.step == 10) token.request_stop();  // 8 batches of 2 per epoch after the restart
  };
  const en::RunResult stopped = en::Trainer(with_batch(tmp / "oom", "4"), cb).run(token);
  en::testing::clear_faults();
  CHECK(stopped.outcome == en::RunOutcome::Stopped);
  CHECK(stopped.step == 10);
  const std::string log = yt::slurp(tmp / "oom" / "run" / "train.log");
  CHECK_THAT(log, Catch::Contains("CPU out of memory with batch=4. Reducing to batch=2 and retrying (1/3)."));
  CHECK_THAT(yt::slurp(tmp / "oom" / "run" / "args.yaml"), Catch::Contains("batch: 2"));
  token.reset();
  en::TrainConfig resume = with_batch(tmp / "oom", "4");
  resume.set("resume", "true");  // the stored arguments win: batch 2
  const en::RunResult resumed = en::Trainer(resume).run(token);
  CHECK(resumed.outcome == en::RunOutcome::Completed);
  CHECK(weights_of(tmp / "oom" / "run") == weights_of(tmp / "b2" / "run"));
}

TEST_CASE("out of memory again at batch 1 fails the run with the error", "[integration][self-healing]") {
  yt::TempDir tmp;
  en::testing::inject_out_of_memory(0, 3);  // batch 4, 2, 1
  yolotrain::lifecycle::ControlToken token;
  const en::RunResult r = en::Trainer(healing_config(tmp.path())).run(token);
  en::testing::clear_faults();
  CHECK(r.outcome == en::RunOutcome::Failed);
  CHECK_THAT(r.reason, Catch::Contains("out of memory"));
  CHECK_THAT(yt::slurp(tmp / "run" / "train.log"), Catch::Contains("Reducing to batch=1 and retrying (2/3)"));
}
