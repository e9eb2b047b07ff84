// An epoch's figures by name, and results.csv written from them with Ultralytics' bytes.
#include <ATen/ATen.h>

#include "run_outputs.hpp"
#include "yolotrain/engine/trainer.hpp"

#include "catch.hpp"

namespace en = yolotrain::engine;

TEST_CASE("an epoch's figures have Ultralytics' names in results.csv's order", "[engine]") {
  en::EpochMetrics m;
  m.box_loss = 1.5;
  m.map50 = 0.25;
  m.lr_pg2 = 0.001;
  const auto named = m.named();
  REQUIRE(named.size() == 13);
  CHECK(named.front() == std::pair<std::string, double>{"train/box_loss", 1.5});
  CHECK(named[5] == std::pair<std::string, double>{"metrics/mAP50(B)", 0.25});
  CHECK(named.back() == std::pair<std::string, double>{"lr/pg2", 0.001});
  CHECK(m.set("val/cls_loss", 2.0));
  CHECK(m.val_cls_loss == 2.0);
  CHECK(m.set("fitness", 0.7));
  CHECK(m.fitness == 0.7);
  CHECK_FALSE(m.set("metrics/mAP75(B)", 1.0));
}

// The header and a row as Ultralytics' save_metrics writes them ("%23s," / "%23.5g,").
TEST_CASE("results.csv's header and rows are Ultralytics' bytes", "[engine]") {
  CHECK(en::results_csv_header() ==
        "                  epoch,         train/box_loss,         train/cls_loss,         train/dfl_loss,"
        "   metrics/precision(B),      metrics/recall(B),       metrics/mAP50(B),    metrics/mAP50-95(B),"
        "           val/box_loss,           val/cls_loss,           val/dfl_loss,                 lr/pg0,"
        "                 lr/pg1,                 lr/pg2\n");
  en::EpochMetrics m;
  m.epoch = 2;
  m.box_loss = 3.1173;
  m.cls_loss = 2.4614;
  m.dfl_loss = 1.783;
  m.val_box_loss = 1.3955;
  m.val_cls_loss = 3.6696;
  m.val_dfl_loss = 0.77507;
  m.lr_pg0 = m.lr_pg1 = m.lr_pg2 = 0.00039769;
  CHECK(en::results_csv_row(m) ==
        "                      2,                 3.1173,                 2.4614,                  1.783,"
        "                      0,                      0,                      0,                      0,"
        "                 1.3955,                 3.6696,                0.77507,             0.00039769,"
        "             0.00039769,             0.00039769\n");
}
