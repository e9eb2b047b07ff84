// The optimizer and schedule as Ultralytics builds them (the engine's private optimizer.hpp).
#include <torch/optim/optimizer.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "multi_scale.hpp"
#include "optimizer.hpp"
#include "yolotrain/nn/detection_model.hpp"

#include "catch.hpp"

using namespace yolotrain::engine;

TEST_CASE("the LR factor is linear or one-cycle cosine from 1 to lrf", "[engine]") {
  TrainConfig cfg;
  cfg.lrf = 0.01;
  CHECK(lr_factor(cfg, 0, 100) == Approx(1.0));
  CHECK(lr_factor(cfg, 50, 100) == Approx(0.505));
  CHECK(lr_factor(cfg, 100, 100) == Approx(0.01));
  cfg.cos_lr = true;
  CHECK(lr_factor(cfg, 0, 100) == Approx(1.0));
  CHECK(lr_factor(cfg, 50, 100) == Approx(0.505));
  CHECK(lr_factor(cfg, 25, 100) == Approx((1 - std::cos(M_PI / 4)) / 2 * (0.01 - 1) + 1));
  CHECK(lr_factor(cfg, 100, 100) == Approx(0.01));
  CHECK(interp(-1, 100, 0.1, 0.01) == 0.1);
  CHECK(interp(50, 100, 0.1, 0.01) == Approx(0.055));
  CHECK(interp(150, 100, 0.1, 0.01) == 0.01);
}

TEST_CASE("optimizer=auto chooses as Ultralytics does", "[engine]") {
  TrainConfig cfg;  // batch 16, nbs 64, epochs 100
  OptimizerChoice c = choose_optimizer(cfg, 128, 3);  // ceil(128/64)*100 = 200 iterations
  CHECK(c.name == "AdamW");
  CHECK(c.lr == Approx(0.001429));  // round(0.002 * 5 / (4 + 3), 6)
  CHECK(c.momentum == 0.9);
  CHECK(c.warmup_bias_lr == 0.0);
  CHECK(c.weight_decay == Approx(0.0005));  // 0.0005 * 16 * round(64/16) / 64
  cfg.compat = "8.3";
  c = choose_optimizer(cfg, 10000, 80);  // 157 * 100 > 10000: 8.3's SGD (8.4: MuSGD, below)
  CHECK(c.name == "SGD");
  CHECK(c.lr == 0.01);
  cfg.optimizer = "SGD";
  cfg.batch = 8;
  c = choose_optimizer(cfg, 128, 3);
  CHECK(c.lr == cfg.lr0);
  CHECK(c.momentum == cfg.momentum);
  CHECK(c.warmup_bias_lr == cfg.warmup_bias_lr);
  CHECK(c.weight_decay == Approx(0.0005 * 8 * 8 / 64));
}

TEST_CASE("yolov8n's parameter groups are Ultralytics' 63 biases 64 weights and 57 BN weights", "[engine]") {
  // Ultralytics logs "parameter groups 57 weight(decay=0.0), 64 weight(decay=0.0005), 63 bias(decay=0.0)".
  yolotrain::nn::DetectionModel model(yolotrain::nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  OptimizerChoice c{"SGD", 0.01, 0.937, 0.1, 0.0005};
  auto opt = build_optimizer(model, c);
  REQUIRE(opt->param_groups().size() == 3);
  CHECK(opt->param_groups()[0].params().size() == 63);
  CHECK(opt->param_groups()[1].params().size() == 64);
  CHECK(opt->param_groups()[2].params().size() == 57);
  // results.csv's lr/pg0-2 in 8.4's order, weight (64), bn (57), bias (63); 8.3's bias, weight, bn.
  const auto v84 = reported_groups("SGD", true);
  CHECK(opt->param_groups()[v84[0]].params().size() == 64);
  CHECK(opt->param_groups()[v84[1]].params().size() == 57);
  CHECK(opt->param_groups()[v84[2]].params().size() == 63);
  CHECK(reported_groups("SGD", false) == std::array<std::size_t, 3>{0, 1, 2});
  CHECK(reported_groups("MuSGD", true) == std::array<std::size_t, 3>{0, 1, 2});  // 8.4's own order
  set_group(*opt, 0, 0.05, 0.8);
  CHECK(group_lr(*opt, 0) == 0.05);
  CHECK(group_lr(*opt, 1) == 0.01);
}

// Ultralytics 8.4.117's BaseTrainer.build_optimizer(model, "MuSGD", 0.01, 0.9, 0.0005) on
// DetectionModel(yaml, nc=3) (SegmentationModel for -seg), its param_groups' sizes printed: the same
// eight groups.
TEST_CASE("MuSGD's eight parameter groups are Ultralytics 8.4's", "[engine][musgd]") {
  const std::vector<std::pair<std::string, std::vector<std::size_t>>> expected = {
      {"yolo26n.yaml", {0, 0, 24, 90, 30, 96, 30, 96}},
      {"yolov8n.yaml", {0, 0, 6, 51, 9, 54, 9, 55}},
      {"yolo26n-seg.yaml", {0, 0, 26, 108, 33, 121, 33, 121}}};  // SegmentationModel: proto.semseg boosted too
  for (const auto& [yaml, sizes] : expected) {
    INFO(yaml);
    yolotrain::nn::DetectionModel model(yolotrain::nn::DetectionModelOptions(yaml).nc(3));
    auto opt = build_optimizer(model, OptimizerChoice{"MuSGD", 0.01, 0.9, 0.0, 0.0005});
    REQUIRE(opt->param_groups().size() == 8);
    const auto roles = group_roles("MuSGD");
    for (std::size_t g = 0; g < 8; ++g) {
      CAPTURE(g);
      CHECK(opt->param_groups()[g].params().size() == sizes[g]);
      CHECK(group_lr(*opt, g) == Approx(0.01 * roles[g].lr_scale));  // the class heads' groups: x3
      CHECK(roles[g].bias == (g == 4 || g == 5));
    }
  }
}

TEST_CASE("optimizer=auto picks MuSGD for long runs under compat=8.4 and SGD under 8.3", "[engine][musgd]") {
  TrainConfig cfg;
  CHECK(choose_optimizer(cfg, 10000, 80).name == "MuSGD");  // 157 * 100 iterations
  CHECK(choose_optimizer(cfg, 10000, 80).lr == 0.01);
  CHECK(choose_optimizer(cfg, 128, 3).name == "AdamW");
  cfg.compat = "8.3";
  CHECK(choose_optimizer(cfg, 10000, 80).name == "SGD");
  cfg.optimizer = "musgd";  // by name, any case
  CHECK(choose_optimizer(cfg, 128, 3).name == "MuSGD");
}

TEST_CASE("compat=8.3's warm-up: at least 100 iterations, the ramp rounded as Python and numpy do", "[engine]") {
  TrainConfig cfg;  // nbs 64, batch 16, warmup_epochs 3
  cfg.compat = "8.3";
  CHECK(python_round(2.5) == 2);
  CHECK(python_round(3.5) == 4);
  CHECK(python_round(-0.5) == 0);
  CHECK(warmup_iterations(cfg, 13) == 100);  // max(round(3 * 13), 100)
  cfg.warmup_epochs = 2.5;
  CHECK(warmup_iterations(cfg, 41) == 102);  // round(102.5) = 102
  cfg.warmup_epochs = 3;
  // accumulate = round(interp(ni, [0, 100], [1, 4])): 1 + 3 ni / 100
  CHECK(accumulate_at(cfg, 0, 13) == 1);
  CHECK(accumulate_at(cfg, 17, 13) == 2);   // 1.51
  CHECK(accumulate_at(cfg, 50, 13) == 2);   // 2.5: numpy's round gives 2
  CHECK(accumulate_at(cfg, 51, 13) == 3);   // 2.53
  CHECK(accumulate_at(cfg, 83, 13) == 3);   // 3.49
  CHECK(accumulate_at(cfg, 100, 13) == 4);
  CHECK(accumulate_at(cfg, 5000, 13) == 4);  // round(64 / 16) after the warm-up
  const OptimizerChoice sgd{"SGD", 0.01, 0.937, 0.1, 0.0005};
  const StepSchedule after = schedule_at(cfg, sgd, 101, 13);  // past the warm-up: the scheduler's lr at once
  CHECK(after.lr[1] == Approx(0.01 * lr_factor(cfg, 101 / 13, cfg.epochs)));
  CHECK(after.momentum == Approx(0.937));
  cfg.warmup_epochs = 0;  // 8.3.58: nw = -1, no warm-up at all
  CHECK(warmup_iterations(cfg, 13) == -1);
  CHECK(schedule_at(cfg, sgd, 0, 13).lr[0] == Approx(0.01));
  CHECK(accumulate_at(cfg, 0, 13) == 4);
  cfg.batch = 128;
  CHECK(accumulate_at(cfg, 5000, 13) == 1);  // round(0.5) = 0, at least 1
}

namespace {

struct WarmupRow {
  std::int64_t nb, epochs, ni, nw;
  double lr_weight, lr_bn, lr_bias, momentum;
  std::int64_t accumulate, steps;
};

std::vector<WarmupRow> warmup_rows() {
  std::ifstream in(std::filesystem::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/engine/data/warmup84.tsv");
  std::string header;
  std::getline(in, header);
  std::vector<WarmupRow> rows;
  WarmupRow r{};
  while (in >> r.nb >> r.epochs >> r.ni >> r.nw >> r.lr_weight >> r.lr_bn >> r.lr_bias >> r.momentum >> r.accumulate >>
         r.steps) {
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

// tests/unit/engine/data/warmup84.tsv: scripts/ultralytics84_warmup.py, Ultralytics 8.4.117's own
// _get_warmup_iterations, build_optimizer and LambdaLR scheduler, its loop's warm-up lines, SGD at
// lr0 0.01, momentum 0.937, warmup_bias_lr 0.1, batch 16, nbs 64, for nb 1, 16, 500 x epochs 1, 2, 100.
TEST_CASE("8.4's warm-up: each step's lr, momentum, accumulate and optimizer step are Ultralytics'", "[engine]") {
  const std::vector<WarmupRow> rows = warmup_rows();
  REQUIRE(rows.size() > 500);
  const OptimizerChoice sgd{"SGD", 0.01, 0.937, 0.1, 0.0005};
  const std::vector<GroupRole> roles = group_roles("SGD");  // bias, weight, bn
  REQUIRE(roles[0].bias);
  std::int64_t checked_steps = 0;
  for (std::int64_t nb : {1, 16, 500}) {
    for (std::int64_t epochs : {1, 2, 100}) {
      TrainConfig cfg;
      cfg.epochs = epochs;
      std::int64_t last_opt_step = -1;
      auto row = rows.begin();
      for (std::int64_t ni = 0; ni < nb * epochs; ++ni) {
        const StepSchedule s = schedule_at(cfg, sgd, ni, nb);
        const bool steps = ni - last_opt_step >= s.accumulate;
        if (steps) last_opt_step = ni;
        row = std::find_if(row, rows.end(), [&](const WarmupRow& r) {
          return r.nb == nb && r.epochs == epochs && r.ni >= ni;
        });
        if (row == rows.end() || row->ni != ni) continue;
        CAPTURE(nb, epochs, ni);
        CHECK(warmup_iterations(cfg, nb) == row->nw);
        CHECK(s.lr[1] == Approx(row->lr_weight).margin(1e-12));
        CHECK(s.lr[2] == Approx(row->lr_bn).margin(1e-12));
        CHECK(s.lr[0] == Approx(row->lr_bias).margin(1e-12));
        CHECK(s.momentum == Approx(row->momentum).margin(1e-12));
        CHECK(s.accumulate == row->accumulate);
        CHECK(std::int64_t(steps) == row->steps);
        ++checked_steps;
      }
    }
  }
  CHECK(checked_steps == std::int64_t(rows.size()));
}

TEST_CASE("8.4's warm-up leaves the last epoch unwarmed and none at warmup_epochs=0", "[engine]") {
  TrainConfig cfg;
  cfg.epochs = 2;
  CHECK(warmup_iterations(cfg, 16) == 16);  // min(3, 2 - 1) epochs
  cfg.epochs = 1;
  CHECK(warmup_iterations(cfg, 16) == 0);
  cfg.epochs = 100;
  cfg.warmup_epochs = 0;
  CHECK(warmup_iterations(cfg, 16) == 0);
  const OptimizerChoice adamw{"AdamW", 0.001429, 0.9, 0.0, 0.0005};  // optimizer=auto's
  const StepSchedule s = schedule_at(cfg, adamw, 0, 16);
  CHECK(s.lr[0] == Approx(0.001429));  // the scheduler's lr from the first step
  CHECK(s.momentum == 0.9);            // the optimizer's own: nothing ramps it
  CHECK(s.accumulate == 4);
}

// models/yolo/detect/train.py preprocess_batch: random.randrange(max(gs, int(imgsz * (1 - f))),
// int(imgsz * (1 + f) + gs)) // gs * gs (8.4); 8.3.58: randrange(int(imgsz * 0.5), int(imgsz * 1.5 + gs)).
TEST_CASE("multi_scale draws 8.4's fraction of imgsz, or 8.3's +-50 %, in multiples of the stride", "[engine]") {
  TrainConfig cfg;
  cfg.imgsz = 160;
  cfg.multi_scale = 0.5;
  CHECK(multi_scale_range(cfg, 32).lo == 80);
  CHECK(multi_scale_range(cfg, 32).hi == 272);
  cfg.multi_scale = 1.0;  // multi_scale=True
  CHECK(multi_scale_range(cfg, 32).lo == 32);  // never below the stride
  CHECK(multi_scale_range(cfg, 32).hi == 352);
  cfg.multi_scale = 0.25;
  std::set<std::int64_t> sizes;
  for (std::int64_t ni = 0; ni < 400; ++ni) {
    const std::int64_t s = multi_scale_size(cfg, 32, ni);
    CHECK(s % 32 == 0);
    CHECK(s >= 96);   // 120 floored to the stride
    CHECK(s <= 224);  // below int(200 + 32) = 232
    CHECK(multi_scale_size(cfg, 32, ni) == s);  // the same step draws the same
    sizes.insert(s);
  }
  CHECK(sizes == std::set<std::int64_t>{96, 128, 160, 192, 224});
  cfg.compat = "8.3";
  CHECK(multi_scale_range(cfg, 32).lo == 80);
  CHECK(multi_scale_range(cfg, 32).hi == 272);
}
