// Rank 0's outputs by construction: the set another rank gets writes nothing, whatever listens.
#include <ATen/ATen.h>

#include "run_log.hpp"
#include "run_outputs.hpp"

#include "catch.hpp"

#include "test_support.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace yolotrain::engine;
namespace out_detail = yolotrain::engine::detail;

namespace {

EpochMetrics an_epoch() {
  EpochMetrics m = EpochMetrics::with_columns({"train/box_loss", "metrics/mAP50(B)"});
  m.epoch = 1;
  m.set("train/box_loss", 1.25);
  m.set("metrics/mAP50(B)", 0.5);
  return m;
}

std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

// Every event the outputs listen to, once.
void drive(TrainerCallbacks& cb) {
  TrainerProgress p;
  p.batch = p.batches = 1;
  p.losses = {{"box_loss", 2.0}};
  cb.on_train_epoch_start(p);
  cb.on_batch_end(p);
  cb.on_fit_epoch_end(an_epoch());
  cb.on_state_change(yolotrain::lifecycle::RunState::Completed);
  cb.on_train_end(RunResult{});
}

}  // namespace

TEST_CASE("another rank's outputs write no file, rank 0's write args.yaml, results.csv and status.json", "[engine]") {
  yt::TempDir tmp;
  TrainConfig cfg;
  cfg.tensorboard = true;
  cfg.metrics_file = (tmp / "other" / "metrics.prom").string();
  fs::create_directories(tmp / "other");
  for (const bool leader : {false, true}) {
    CAPTURE(leader);
    const fs::path dir = tmp / (leader ? "rank0" : "rank1");
    fs::create_directories(dir);
    {
      out_detail::RunLog log;
      log.set_speaks(leader);
      out_detail::RunOutputs out = out_detail::open_run_outputs(leader, dir, cfg, 0, 0, "");
      TrainerCallbacks cb = out_detail::with_run_outputs(out, log, cfg, {});
      drive(cb);
      if (out.plots) out.plots->wait();
      CHECK(out.results.text().find("1.25") != std::string::npos);  // the text a checkpoint carries, on every rank
    }
    if (leader) {
      CHECK(fs::exists(dir / "args.yaml"));
      CHECK(fs::exists(dir / "results.png"));
      CHECK(fs::exists(tmp / "other" / "metrics.prom"));
      const std::string csv = yt::slurp(dir / "results.csv");
      CHECK(csv.find("1.25") != std::string::npos);
      CHECK(yt::slurp(dir / "status.json").find("\"completed\"") != std::string::npos);
    } else {
      CHECK(files_in(dir) == 0);
      CHECK_FALSE(fs::exists(tmp / "other" / "metrics.prom"));
    }
  }
}
