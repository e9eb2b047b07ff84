// Integration tests of oriented-box (OBB) training through yolo_train: real processes and signals, the
// built-in shapes set's oriented variant (corners of turned shapes).
#include <ATen/ATen.h>

#include "yolotrain/data/image.hpp"

#include "catch.hpp"
#include <signal.h>

#include <sstream>

#include "results_csv.hpp"
#include "test_support.hpp"
#include "tiny_shapes.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace obb_runs {

std::vector<std::string> obb_args(const fs::path& project, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = yt::train_args(project, {"data=" + yt::tiny_shapes_obb_dataset().string()});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The rows of every save_txt file under `labels`, each as its number of columns.
std::vector<std::size_t> label_widths(const fs::path& labels) {
  std::vector<std::size_t> widths;
  for (const auto& e : fs::directory_iterator(labels)) {
    std::istringstream lines(yt::slurp(e.path()));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream cells(line);
      std::size_t n = 0;
      for (std::string cell; cells >> cell;) ++n;
      widths.push_back(n);
    }
  }
  return widths;
}

}  // namespace obb_runs

using namespace obb_runs;

// An OBB run is a run like any other: Ultralytics 8.4's OBBTrainer columns (progress line, validation
// table, results.csv with angle_loss), and SIGTERM mid-epoch then resume=true ends on the weights of the
// run that was not stopped; its weights predict rotated boxes (save_txt: class, 4 corners, conf) and
// export to ONNX.
TEST_CASE("an OBB run: Ultralytics' columns, and SIGTERM mid-epoch then resume=true end byte-identical",
          "[integration][obb]") {
  yt::TempDir tmp;
  const std::vector<std::string> obb = {"model=yolo11n-obb.yaml", "plots=true"};
  const yt::Finished straight = yt::run_to_end(obb_args(tmp / "straight", obb), tmp / "straight.txt");
  INFO(straight.output);
  REQUIRE(straight.code == 0);
  CHECK_THAT(straight.output, Catch::Contains("box_loss   cls_loss   dfl_loss angle_loss  Instances"));
  CHECK_THAT(straight.output, Catch::Contains("Box(P          R      mAP50  mAP50-95)"));
  const fs::path run = tmp / "straight" / "run";
  CHECK_THAT(yt::slurp(run / "args.yaml"), Catch::Contains("task: \"obb\""));
  const yt::Csv csv = yt::read_results(run / "results.csv");
  CHECK(csv.names == std::vector<std::string>{"epoch", "time", "train/box_loss", "train/cls_loss", "train/dfl_loss",
                                              "train/angle_loss", "metrics/precision(B)", "metrics/recall(B)",
                                              "metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss",
                                              "val/cls_loss", "val/dfl_loss", "val/angle_loss", "lr/pg0", "lr/pg1",
                                              "lr/pg2"});
  REQUIRE(csv.rows.size() == 2);
  // Validation at the training batch (4), not twice it, as Ultralytics' OBB trainer: its first batch
  // drawn in 2 x 2 tiles of 96 px (a detection run's batch of 8 draws 3 x 3).
  CHECK(yolotrain::data::decode_image(run / "val_batch0_labels.jpg").width == 192);
  CHECK(csv.at(1, "train/angle_loss") > 0);
  CHECK(csv.at(1, "val/angle_loss") > 0);
  yt::check_stopped_and_resumed(tmp, obb_args, obb, 3, run);

  const fs::path best = run / "weights" / "best.ytckpt";
  const yt::Finished predicted = yt::run_to_end(
      {YOLO_TRAIN_PATH, "predict", "model=" + best.string(),
       "source=" + (yt::tiny_shapes_obb_dataset().parent_path() / "images" / "val").string(), "imgsz=64",
       "conf=0.001", "save_txt=true", "save_conf=true", "device=cpu", "project=" + (tmp / "pred").string(),
       "name=p"},
      tmp / "predict.txt");
  INFO(predicted.output);
  REQUIRE(predicted.code == 0);
  const std::vector<std::size_t> widths = label_widths(tmp / "pred" / "p" / "labels");
  CHECK_FALSE(widths.empty());
  for (std::size_t n : widths) CHECK(n == 1 + 8 + 1);  // class, x1 y1 .. x4 y4, conf
  const yt::Finished exported =  // output0 with the angle: tests/unit/export/onnx_obb_test.cpp
      yt::run_to_end({YOLO_TRAIN_PATH, "export", "model=" + best.string(), "format=onnx"}, tmp / "export-onnx.txt");
  INFO(exported.output);
  CHECK(exported.code == 0);
  CHECK(fs::exists(run / "weights" / "best.onnx"));
}

// YOLO26-obb: E2ELoss around v8OBBLoss (reg_max 1: the L1 term) with weights that move per epoch — the
// stop comes in the second of three epochs; compat=8.3's loss has no angle term.
TEST_CASE("a YOLO26-obb run: l1 and angle terms, SIGTERM in its second epoch then resume=true end byte-identical",
          "[integration][obb][yolo26]") {
  yt::TempDir tmp;
  const std::vector<std::string> obb = {"model=yolo26n-obb.yaml", "epochs=3"};
  const yt::Finished straight = yt::run_to_end(obb_args(tmp / "straight", obb), tmp / "straight.txt");
  INFO(straight.output);
  REQUIRE(straight.code == 0);
  const fs::path run = tmp / "straight" / "run";
  const yt::Csv csv = yt::read_results(run / "results.csv");
  CHECK(csv.at(0, "train/l1_loss") > 0);
  CHECK(csv.at(0, "train/angle_loss") > 0);
  yt::check_stopped_and_resumed(tmp, obb_args, obb, 6, run);  // 4 batches per epoch: inside epoch 2
}

TEST_CASE("an OBB model on upright boxes exits 2 saying why, and task=obb with compat=8.3 trains its defaults",
          "[integration][obb]") {
  yt::TempDir tmp;
  const yt::Finished boxes =
      yt::run_to_end(yt::train_args(tmp / "a", {"model=yolo11n-obb.yaml", "epochs=1"}), tmp / "a.txt");
  INFO(boxes.output);
  CHECK(boxes.code == 2);
  CHECK_THAT(boxes.output, Catch::Contains("an OBB model needs oriented labels (class x1 y1 x2 y2 x3 y3 x4 y4"));
  const yt::Finished f =
      yt::run_to_end(obb_args(tmp / "b", {"task=obb", "epochs=1", "compat=8.3"}), tmp / "b.txt");
  INFO(f.output);
  CHECK(f.code == 0);
  CHECK_THAT(yt::slurp(tmp / "b" / "run" / "args.yaml"), Catch::Contains("model: \"yolov8n-obb.yaml\""));
  const yt::Csv csv = yt::read_results(tmp / "b" / "run" / "results.csv");
  CHECK(std::find(csv.names.begin(), csv.names.end(), "train/angle_loss") == csv.names.end());
  CHECK(csv.at(0, "train/dfl_loss") > 0);
}
