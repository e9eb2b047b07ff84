// Integration tests of classification training through yolo_train (issue 54): real processes and
// signals, the built-in shapes set's class-folder variant.
#include <ATen/ATen.h>

#include "catch.hpp"
#include <signal.h>

#include <algorithm>

#include "results_csv.hpp"
#include "test_support.hpp"
#include "tiny_shapes.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> cls_args(const fs::path& project, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = yt::train_args(project, {"data=" + yt::tiny_shapes_cls_dataset().string()});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

// Ultralytics 8.4's ClassificationTrainer columns (progress line, validation table, results.csv), its
// pictures (train batches with classes, the confusion matrix; no labels.jpg), and SIGTERM mid-epoch
// then resume=true ending on the weights of the run that was not stopped.
TEST_CASE("a classification run: Ultralytics' columns, and SIGTERM mid-epoch then resume=true end byte-identical",
          "[integration][classify]") {
  yt::TempDir tmp;
  const std::vector<std::string> cls = {"model=yolo11n-cls.yaml", "imgsz=32", "plots=true"};
  const yt::Finished straight = yt::run_to_end(cls_args(tmp / "straight", cls), tmp / "straight.txt");
  INFO(straight.output);
  REQUIRE(straight.code == 0);
  CHECK_THAT(straight.output, Catch::Contains("Epoch    GPU_mem       loss  Instances       Size"));
  CHECK_THAT(straight.output, Catch::Contains("classes   top1_acc   top5_acc"));
  CHECK_THAT(straight.output, Catch::Contains("epoch 2/2: top1 ") && Catch::Contains(" top5 1.000 (losses "));
  const fs::path run = tmp / "straight" / "run";
  CHECK_THAT(yt::slurp(run / "args.yaml"), Catch::Contains("task: \"classify\""));
  const yt::Csv csv = yt::read_results(run / "results.csv");
  CHECK(csv.names == std::vector<std::string>{
      "epoch", "time", "train/loss", "metrics/accuracy_top1", "metrics/accuracy_top5", "val/loss", "lr/pg0",
      "lr/pg1", "lr/pg2"});
  REQUIRE(csv.rows.size() == 2);
  CHECK(csv.at(1, "train/loss") > 0);
  CHECK(csv.at(1, "val/loss") > 0);
  CHECK(csv.at(1, "metrics/accuracy_top5") == 1);  // 4 classes: the top 5 hold every one
  CHECK(fs::exists(run / "train_batch0.jpg"));
  CHECK(fs::exists(run / "confusion_matrix.png"));
  CHECK_FALSE(fs::exists(run / "labels.jpg"));

  yt::check_stopped_and_resumed(tmp, cls_args, cls, 3, run);  // 4 batches per epoch: inside the first

  // Its weights predict (save_txt: Ultralytics' "0.87 name" line per top class, the 4 classes here),
  // validate, and export to ONNX (output0 the probabilities: tests/unit/export/onnx_classify_test.cpp).
  const fs::path best = run / "weights" / "best.ytckpt";
  const yt::Finished predicted = yt::run_to_end(
      {YOLO_TRAIN_PATH, "predict", "model=" + best.string(),
       "source=" + (yt::tiny_shapes_cls_dataset() / "val" / "cross").string(), "imgsz=32", "save_txt=true",
       "device=cpu", "project=" + (tmp / "pred").string(), "name=p"},
      tmp / "predict.txt");
  INFO(predicted.output);
  REQUIRE(predicted.code == 0);
  const std::string labels = yt::slurp(tmp / "pred" / "p" / "labels" / "000003.txt");
  CHECK(std::count(labels.begin(), labels.end(), '\n') == 4);
  CHECK_THAT(labels, Catch::Contains(" cross\n"));
  CHECK(fs::exists(tmp / "pred" / "p" / "000003.jpg"));
  const yt::Finished validated = yt::run_to_end(
      {YOLO_TRAIN_PATH, "val", "model=" + best.string(), "data=" + yt::tiny_shapes_cls_dataset().string(),
       "device=cpu", "project=" + (tmp / "val").string()},
      tmp / "val.txt");
  INFO(validated.output);
  CHECK(validated.code == 0);
  CHECK_THAT(validated.output, Catch::Contains("classes   top1_acc   top5_acc"));
  CHECK(fs::exists(tmp / "val" / "val" / "confusion_matrix.png"));
  CHECK(fs::exists(tmp / "val" / "val" / "val_batch0_pred.jpg"));
  const yt::Finished exported =
      yt::run_to_end({YOLO_TRAIN_PATH, "export", "model=" + best.string(), "format=onnx"}, tmp / "export-onnx.txt");
  INFO(exported.output);
  CHECK(exported.code == 0);
  CHECK(fs::exists(run / "weights" / "best.onnx"));
}

TEST_CASE("a classification model on box labels, a detection model on class folders, and auto_augment=augmix exit "
          "2 saying why",
          "[integration][classify]") {
  yt::TempDir tmp;
  const yt::Finished boxes =
      yt::run_to_end(yt::train_args(tmp / "a", {"model=yolo11n-cls.yaml", "epochs=1"}), tmp / "a.txt");
  INFO(boxes.output);
  CHECK(boxes.code == 2);
  CHECK_THAT(boxes.output, Catch::Contains("but the model is a classification model, which trains on a folder"));
  const yt::Finished folders = yt::run_to_end(cls_args(tmp / "b", {"epochs=1"}), tmp / "b.txt");
  INFO(folders.output);
  CHECK(folders.code == 2);
  CHECK_THAT(folders.output, Catch::Contains("is a classification dataset (a folder of class folders, no boxes), but "
                                             "the model is a detect model; give a -cls model"));
  const yt::Finished policy =
      yt::run_to_end(cls_args(tmp / "c", {"model=yolo11n-cls.yaml", "auto_augment=augmix"}), tmp / "c.txt");
  INFO(policy.output);
  CHECK(policy.code == 2);
  CHECK_THAT(policy.output, Catch::Contains("auto_augment=augmix: yolotrain has randaugment (Ultralytics' default) "
                                            "and none, not augmix"));
}

TEST_CASE("task=classify trains the classification defaults, single_cls too", "[integration][classify]") {
  yt::TempDir tmp;
  const yt::Finished f = yt::run_to_end(
      cls_args(tmp.path(), {"task=classify", "epochs=1", "imgsz=32", "single_cls=true"}), tmp / "o.txt");
  INFO(f.output);
  CHECK(f.code == 0);
  CHECK_THAT(yt::slurp(tmp / "run" / "args.yaml"), Catch::Contains("model: \"yolov8n-cls.yaml\""));
  const yt::Csv csv = yt::read_results(tmp / "run" / "results.csv");
  CHECK(csv.at(0, "metrics/accuracy_top1") == 1);  // one class: every image right
}
