// An epoch's figures by name, as each task lays them out, and results.csv written from them with
// Ultralytics' bytes.
#include <ATen/ATen.h>

#include "run_outputs.hpp"
#include "tasks/task.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/engine/trainer.hpp"

#include "catch.hpp"

namespace en = yolotrain::engine;
namespace ytnn = yolotrain::nn;

namespace {

std::vector<std::string> columns_of(const std::string& yaml, const std::string& compat = "8.4") {
  en::TrainConfig cfg;
  cfg.model = yaml;
  cfg.compat = compat;
  const ytnn::DetectionModel model(ytnn::DetectionModelOptions(yaml).nc(2).ultralytics(compat));
  yolotrain::data::DataConfig data;  // a pose model's dataset names its keypoints
  if (model->task() == "pose") data.kpt_shape = std::array<int, 2>{17, 3};
  std::vector<std::string> names;
  for (const auto& [name, value] : en::make_task(model, cfg, data)->epoch_metrics().named()) names.push_back(name);
  return names;
}

const std::vector<std::string> kLr{"lr/pg0", "lr/pg1", "lr/pg2"};

std::vector<std::string> joined(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST_CASE("an epoch's figures have Ultralytics' names in results.csv's order", "[engine]") {
  en::EpochMetrics m = en::EpochMetrics::with_columns({"train/box_loss", "metrics/mAP50(B)", "lr/pg2"});
  CHECK(m.set("metrics/mAP50(B)", 0.25));
  CHECK(m.named()[1] == std::pair<std::string, double>{"metrics/mAP50(B)", 0.25});
  CHECK(m.get("metrics/mAP50(B)") == 0.25);
  CHECK(m.set("fitness", 0.7));
  CHECK(m.fitness == 0.7);
  CHECK(m.get("fitness") == 0.7);
  CHECK_FALSE(m.set("metrics/mAP75(B)", 1.0));
  CHECK_FALSE(m.get("metrics/mAP75(B)").has_value());
}

// Ultralytics' save_metrics keys: label_loss_items("train"), the validator's metrics keys,
// label_loss_items("val"), lr/pg0-2 — loss_names from the criterion (8.4's v8SegmentationLoss:
// box, seg, cls, dfl, sem; DetMetrics / SegmentMetrics keys).
TEST_CASE("each task's epoch has its own columns: detection's (B), segmentation's (B) and (M), pose's (B) and (P)",
          "[engine]") {
  const std::vector<std::string> box = en::box_metric_keys("B"), mask = en::box_metric_keys("M");
  CHECK(box == std::vector<std::string>{"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
                                         "metrics/mAP50-95(B)"});
  CHECK(columns_of("yolo11n.yaml") ==
        joined({{"train/box_loss", "train/cls_loss", "train/dfl_loss"}, box,
                {"val/box_loss", "val/cls_loss", "val/dfl_loss"}, kLr}));
  CHECK(columns_of("yolo26n.yaml") ==
        joined({{"train/box_loss", "train/cls_loss", "train/l1_loss"}, box,
                {"val/box_loss", "val/cls_loss", "val/l1_loss"}, kLr}));
  CHECK(columns_of("yolo11n-seg.yaml") ==
        joined({{"train/box_loss", "train/seg_loss", "train/cls_loss", "train/dfl_loss", "train/sem_loss"}, box, mask,
                {"val/box_loss", "val/seg_loss", "val/cls_loss", "val/dfl_loss", "val/sem_loss"}, kLr}));
  CHECK(columns_of("yolo26n-seg.yaml")[3] == "train/l1_loss");
  // PoseTrainer: v8PoseLoss' box, pose, kobj, cls, dfl; PoseLoss26 adds rle (l1 in dfl's place).
  const std::vector<std::string> pose = en::box_metric_keys("P");
  CHECK(columns_of("yolo11n-pose.yaml") ==
        joined({{"train/box_loss", "train/pose_loss", "train/kobj_loss", "train/cls_loss", "train/dfl_loss"}, box,
                pose, {"val/box_loss", "val/pose_loss", "val/kobj_loss", "val/cls_loss", "val/dfl_loss"}, kLr}));
  CHECK(columns_of("yolo26n-pose.yaml") ==
        joined({{"train/box_loss", "train/pose_loss", "train/kobj_loss", "train/cls_loss", "train/l1_loss",
                 "train/rle_loss"},
                box,
                pose,
                {"val/box_loss", "val/pose_loss", "val/kobj_loss", "val/cls_loss", "val/l1_loss", "val/rle_loss"},
                kLr}));
  // 8.3's v8SegmentationLoss had four terms: no sem_loss column.
  CHECK(columns_of("yolov8n-seg.yaml", "8.3") ==
        joined({{"train/box_loss", "train/seg_loss", "train/cls_loss", "train/dfl_loss"}, box, mask,
                {"val/box_loss", "val/seg_loss", "val/cls_loss", "val/dfl_loss"}, kLr}));
}

TEST_CASE("a segmentation epoch takes the box and mask figures of a validation, fitness their sum", "[engine]") {
  en::TrainConfig cfg;
  const ytnn::DetectionModel model(ytnn::DetectionModelOptions("yolo11n-seg.yaml").nc(2));
  const auto task = en::make_task(model, cfg);
  en::ValidationReport r;
  r.metrics.mp = 0.5, r.metrics.mr = 0.25, r.metrics.map50 = 0.75, r.metrics.map = 0.5, r.metrics.fitness = 0.5;
  r.mask_metrics.emplace();
  r.mask_metrics->mp = 0.4, r.mask_metrics->map50 = 0.6, r.mask_metrics->map = 0.3, r.mask_metrics->fitness = 0.3;
  r.loss = {1, 2, 3, 4, 5};
  en::EpochMetrics m = task->epoch_metrics();
  task->fill_validation(m, r);
  CHECK(m.get("metrics/mAP50(B)") == 0.75);
  CHECK(m.get("metrics/precision(M)") == 0.4);
  CHECK(m.get("metrics/mAP50-95(M)") == 0.3);
  CHECK(m.get("val/seg_loss") == 2);
  CHECK(m.get("val/sem_loss") == 5);
  CHECK(m.fitness == Approx(0.8));  // SegmentMetrics.fitness: seg.fitness() + box fitness
}

// The header and a row as Ultralytics 8.4.117's save_metrics writes them ("%s," / "%.6g,", since
// 8.3.9): the header and first row of results.csv from its own DetectionTrainer (yolov8n on shapes,
// seed 0, `python3 scripts/compare_learning.py --model yolov8n.yaml ...`).
TEST_CASE("results.csv's header and rows are Ultralytics' bytes", "[engine]") {
  en::TrainConfig cfg;
  const ytnn::DetectionModel model(ytnn::DetectionModelOptions("yolov8n.yaml").nc(4));
  en::EpochMetrics m = en::make_task(model, cfg)->epoch_metrics();
  CHECK(en::results_csv_header(m) ==
        "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
        "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n");
  m.epoch = 1;
  m.time = 14.73912;
  for (const auto& [name, value] : std::vector<std::pair<std::string, double>>{{"train/box_loss", 5.903104},
                                                                                {"train/cls_loss", 4.398332},
                                                                                {"train/dfl_loss", 4.259871},
                                                                                {"val/box_loss", 6.148751},
                                                                                {"val/cls_loss", 4.473159},
                                                                                {"val/dfl_loss", 4.164477},
                                                                                {"lr/pg0", 0.000390625},
                                                                                {"lr/pg1", 0.000390625},
                                                                                {"lr/pg2", 0.000390625}}) {
    REQUIRE(m.set(name, value));
  }
  CHECK(en::results_csv_row(m) ==
        "1,14.7391,5.9031,4.39833,4.25987,0,0,0,0,6.14875,4.47316,4.16448,0.000390625,0.000390625,0.000390625\n");
}

// A checkpoint written before the `time` column keeps its results.csv text in the old layout
// (Ultralytics 8.0's "%23s,"): a resumed run continues it in the new one, the old rows' time empty.
TEST_CASE("a results.csv from before the time column is continued in the current layout", "[engine]") {
  const std::string old = "                  epoch,         train/box_loss,                 lr/pg0\n"
                          "                      1,                  6.037,             0.00039062\n";
  CHECK(en::results_csv_with_time(old) == "epoch,time,train/box_loss,lr/pg0\n1,,6.037,0.00039062\n");
  const std::string current = "epoch,time,train/box_loss\n1,2.5,6.037\n";
  CHECK(en::results_csv_with_time(current) == current);
  CHECK(en::results_csv_with_time("").empty());
  en::detail::ResultsCsv csv({}, old);
  en::EpochMetrics m = en::EpochMetrics::with_columns({"train/box_loss", "lr/pg0"});
  m.epoch = 2;
  m.time = 30;
  csv.add(m, nullptr);
  CHECK(csv.text() == "epoch,time,train/box_loss,lr/pg0\n1,,6.037,0.00039062\n2,30,0,0\n");
}
