// TrainState: one table of checkpoint fields; what a checkpoint lacks or holds unknown is named.
#include <ATen/ATen.h>

#include "train_state.hpp"

#include "catch.hpp"

#include <cmath>

#include "yolotrain/error.hpp"

using yolotrain::engine::TrainState;

namespace {

TrainState a_state() {
  TrainState s;
  s.epoch = 4;
  s.batch = 7;
  s.samples = 56;
  s.world_size = 2;
  s.last_opt_step = 130;
  s.ema_updates = 99;
  s.best_fitness = 0.1 + 0.2;  // not exactly 0.3: must come back bit for bit
  s.best_epoch = 2;
  s.optimizer = "AdamW";
  s.lr = 0.000119;
  s.momentum = 0.9;
  s.warmup_bias_lr = 0.0;
  s.scaler_scale = 32768;
  s.scaler_growth_tracker = 5;
  s.elapsed_s = 12.345;
  s.results_csv = "epoch,train/box_loss\n1,2.5\n";
  s.completed = true;
  s.names = "{\"0\": \"square\"}";
  s.loss_means = {1.5, 2.5, 0.75};
  s.task = {{"o2m_weight", "0x1.8p-1"}};
  return s;
}

}  // namespace

TEST_CASE("a train state written to a checkpoint's fields reads back equal, bit for bit", "[engine]") {
  const TrainState s = a_state();
  const TrainState back = TrainState::from_checkpoint(s.to_extra(), s.epoch, s.loss_means_tensor(), "test");
  CHECK(back.epoch == 4);
  CHECK(back.batch == 7);
  CHECK(back.samples == 56);
  CHECK(back.world_size == 2);
  CHECK(back.last_opt_step == 130);
  CHECK(back.ema_updates == 99);
  CHECK(back.best_fitness == s.best_fitness);
  CHECK(back.best_epoch == 2);
  CHECK(back.optimizer == "AdamW");
  CHECK(back.lr == s.lr);
  CHECK(back.scaler_scale == 32768);
  CHECK(back.scaler_growth_tracker == 5);
  CHECK(back.elapsed_s == s.elapsed_s);
  CHECK(back.results_csv == s.results_csv);
  CHECK(back.completed);
  CHECK(back.names == s.names);
  CHECK(back.loss_means == s.loss_means);
  CHECK(back.task == s.task);
  CHECK(s.to_extra().at("task.o2m_weight") == "0x1.8p-1");
}

TEST_CASE("a checkpoint's missing, unknown or unreadable state fields stop the resume, named", "[engine]") {
  const TrainState s = a_state();
  auto extra = s.to_extra();
  extra.erase("ema_updates");
  extra["gradient_noise"] = "1";
  extra["batch"] = "seven";
  try {
    TrainState::from_checkpoint(extra, 4, s.loss_means_tensor(), "runs/x/weights/last-1.ytckpt");
    FAIL("no error");
  } catch (const yolotrain::ConfigError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("runs/x/weights/last-1.ytckpt"));
    CHECK_THAT(what, Catch::Contains("lacks ema_updates"));
    CHECK_THAT(what, Catch::Contains("gradient_noise"));
    CHECK_THAT(what, Catch::Contains("batch=\"seven\""));
  }
}

TEST_CASE("checkpoints written before a field existed still resume, with what its absence meant", "[engine]") {
  // The fields of the first trainer's checkpoints (2026-11-30), nothing later.
  const std::map<std::string, std::string> first = {{"batch", "3"},
                                                    {"last_opt_step", "10"},
                                                    {"ema_updates", "11"},
                                                    {"best_fitness", "-0x1p+0"},
                                                    {"best_epoch", "-1"},
                                                    {"optimizer", "SGD"},
                                                    {"lr", "0x1.47ae147ae147bp-7"},
                                                    {"momentum", "0x1.e3d70a3d70a3dp-1"},
                                                    {"warmup_bias_lr", "0x1.999999999999ap-4"},
                                                    {"elapsed_s", "0x1.4p+3"},
                                                    {"results_csv", ""},
                                                    {"completed", "0"}};
  const TrainState s = TrainState::from_checkpoint(first, 1, at::zeros({3}, at::kDouble), "old");
  CHECK(s.batch == 3);
  CHECK(s.samples == -1);  // the loader position then comes from batch
  CHECK(s.world_size == 1);
  CHECK(s.scaler_scale == 65536.0);
  CHECK(s.scaler_growth_tracker == 0);
  CHECK(s.names.empty());
  CHECK(s.lr == 0.01);
  CHECK(s.loss_means == std::vector<double>{0, 0, 0});
  CHECK(s.stopper_epoch == -1);  // no best yet
  auto later = first;
  later["best_fitness"] = "0x1p-2";
  later["best_epoch"] = "5";
  const TrainState t = TrainState::from_checkpoint(later, 7, at::zeros({3}, at::kDouble), "old");
  CHECK(t.stopper_epoch == 5);  // EarlyStopping's best was best.pt's then
  CHECK(t.stopper_fitness == 0.25);
}

// Ultralytics 8.4: the trainer's best (best.pt) moves when best_fitness < fitness and best.pt is
// written when they are equal (engine/trainer.py:872, 766); EarlyStopping moves on fitness > best or
// best == 0 (utils/torch_utils.py:1019). 8.3.58: EarlyStopping on fitness >= best.
TEST_CASE("best.pt follows ties, EarlyStopping's best follows 8.4's rule or 8.3's", "[engine]") {
  const std::vector<double> fitness = {0.0, 0.0, 0.4, 0.4, 0.3, 0.5};
  const std::vector<bool> saves = {true, true, true, true, false, true};
  const std::vector<std::int64_t> stopper84 = {0, 1, 2, 2, 2, 5}, stopper83 = {0, 1, 2, 3, 3, 5};
  for (const bool v84 : {true, false}) {
    TrainState s;
    for (std::size_t e = 0; e < fitness.size(); ++e) {
      CAPTURE(v84, e);
      s.epoch = std::int64_t(e);
      CHECK(s.note_fitness(fitness[e], v84) == saves[e]);
      CHECK(s.stopper_epoch == (v84 ? stopper84 : stopper83)[e]);
    }
    CHECK(s.best_epoch == 5);
  }
  TrainState s;
  CHECK_FALSE(s.note_fitness(std::nan(""), true));
}
