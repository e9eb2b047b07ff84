// Integration tests of pose training through yolo_train: real processes and signals, the built-in
// shapes set's pose variant (kpt_shape [5, 3]).
#include <ATen/ATen.h>

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

namespace {

std::vector<std::string> pose_args(const fs::path& project, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = yt::train_args(project, {"data=" + yt::tiny_shapes_pose_dataset().string()});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}


}  // namespace

// A pose run is a run like any other: Ultralytics 8.4's PoseTrainer columns (progress line,
// validation table, results.csv), and SIGTERM mid-epoch then resume=true ends on the weights of
// the run that was not stopped.
TEST_CASE("a pose run: Ultralytics' pose columns, and SIGTERM mid-epoch then resume=true end byte-identical",
          "[integration][pose]") {
  yt::TempDir tmp;
  const std::vector<std::string> pose = {"model=yolo11n-pose.yaml"};
  const yt::Finished straight = yt::run_to_end(pose_args(tmp / "straight", pose), tmp / "straight.txt");
  INFO(straight.output);
  REQUIRE(straight.code == 0);
  CHECK_THAT(straight.output, Catch::Contains("box_loss  pose_loss  kobj_loss   cls_loss   dfl_loss  Instances"));
  CHECK_THAT(straight.output, Catch::Contains("Box(P          R      mAP50  mAP50-95)     Pose(P"));
  const fs::path run = tmp / "straight" / "run";
  CHECK_THAT(yt::slurp(run / "args.yaml"), Catch::Contains("task: \"pose\""));
  const yt::Csv csv = yt::read_results(run / "results.csv");
  CHECK(csv.names == std::vector<std::string>{
      "epoch", "time", "train/box_loss", "train/pose_loss", "train/kobj_loss", "train/cls_loss", "train/dfl_loss",
      "metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)", "metrics/precision(P)",
      "metrics/recall(P)", "metrics/mAP50(P)", "metrics/mAP50-95(P)", "val/box_loss", "val/pose_loss",
      "val/kobj_loss", "val/cls_loss", "val/dfl_loss", "lr/pg0", "lr/pg1", "lr/pg2"});
  REQUIRE(csv.rows.size() == 2);
  CHECK(csv.at(1, "train/pose_loss") > 0);
  CHECK(csv.at(1, "train/kobj_loss") > 0);
  CHECK(csv.at(1, "val/pose_loss") > 0);
  yt::check_stopped_and_resumed(tmp, pose_args, pose, 3, run);

  // Its weights predict keypoints (save_txt: class, box, 5 x (x y visibility), conf per line) and
  // export to ONNX (output0 with the keypoints: tests/unit/export/onnx_pose_test.cpp).
  const fs::path best = run / "weights" / "best.ytckpt";
  const yt::Finished predicted = yt::run_to_end(
      {YOLO_TRAIN_PATH, "predict", "model=" + best.string(),
       "source=" + (yt::tiny_shapes_pose_dataset().parent_path() / "images" / "val").string(), "imgsz=64",
       "conf=0.001", "save_txt=true", "save_conf=true", "device=cpu", "project=" + (tmp / "pred").string(),
       "name=p"},
      tmp / "predict.txt");
  INFO(predicted.output);
  REQUIRE(predicted.code == 0);
  std::size_t rows = 0;
  for (const auto& e : fs::directory_iterator(tmp / "pred" / "p" / "labels")) {
    std::istringstream lines(yt::slurp(e.path()));
    for (std::string line; std::getline(lines, line); ++rows) {
      std::istringstream cells(line);
      std::size_t n = 0;
      for (std::string cell; cells >> cell;) ++n;
      CHECK(n == 1 + 4 + 5 * 3 + 1);
    }
  }
  CHECK(rows > 0);
  const yt::Finished exported =
      yt::run_to_end({YOLO_TRAIN_PATH, "export", "model=" + best.string(), "format=onnx"}, tmp / "export-onnx.txt");
  INFO(exported.output);
  CHECK(exported.code == 0);
  CHECK(fs::exists(run / "weights" / "best.onnx"));
}

// YOLO26-pose: E2ELoss around PoseLoss26 with the RLE term through the head's flow, weights that
// move per epoch — the stop comes in the second of three epochs.
TEST_CASE("a YOLO26-pose run: its rle_loss, and SIGTERM in its second epoch then resume=true end byte-identical",
          "[integration][pose][yolo26]") {
  yt::TempDir tmp;
  const std::vector<std::string> pose = {"model=yolo26n-pose.yaml", "epochs=3"};
  const yt::Finished straight = yt::run_to_end(pose_args(tmp / "straight", pose), tmp / "straight.txt");
  INFO(straight.output);
  REQUIRE(straight.code == 0);
  const fs::path run = tmp / "straight" / "run";
  const yt::Csv csv = yt::read_results(run / "results.csv");
  CHECK(csv.at(0, "train/l1_loss") > 0);  // reg_max 1: no DFL
  CHECK(csv.at(0, "train/rle_loss") != 0);
  yt::check_stopped_and_resumed(tmp, pose_args, pose, 6, run);  // 4 batches per epoch: inside epoch 2
}

TEST_CASE("a pose model on box labels, and a detection model on pose labels, exit 2 saying why",
          "[integration][pose]") {
  yt::TempDir tmp;
  const yt::Finished boxes =
      yt::run_to_end(yt::train_args(tmp / "a", {"model=yolo11n-pose.yaml", "epochs=1"}), tmp / "a.txt");
  INFO(boxes.output);
  CHECK(boxes.code == 2);
  CHECK_THAT(boxes.output, Catch::Contains("no kpt_shape in it, but the model is a pose model"));
  const yt::Finished pose = yt::run_to_end(pose_args(tmp / "b", {"epochs=1"}), tmp / "b.txt");
  INFO(pose.output);
  CHECK(pose.code == 2);
  CHECK_THAT(pose.output, Catch::Contains("names kpt_shape [5, 3]: a pose dataset, whose labels carry keypoints, but "
                                          "the model is a detection model; give a -pose model"));
  CHECK(pose.output.find("coordinates") == std::string::npos);  // no label read as a polygon
}

TEST_CASE("task=pose trains the pose defaults on data=shapes-pose", "[integration][pose]") {
  yt::TempDir tmp;
  const yt::Finished f = yt::run_to_end(pose_args(tmp.path(), {"task=pose", "epochs=1"}), tmp / "out.txt");
  INFO(f.output);
  CHECK(f.code == 0);
  CHECK_THAT(yt::slurp(tmp / "run" / "args.yaml"), Catch::Contains("model: \"yolov8n-pose.yaml\""));
}
