// Integration tests of yolo_train: real processes, real signals, a tiny synthetic dataset.
#include <ATen/ATen.h>

#include "yolotrain/data/image.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/plots/plot_results.hpp"

#include "catch.hpp"
#include <nlohmann/json.hpp>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include "results_csv.hpp"
#include "test_support.hpp"
#include "tiny_shapes.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

// In-process runs here are compared with yolo_train runs: use the same ATen kernels as it does.
const bool same_kernels_as_yolo_train = yolotrain::engine::prefer_avx512_kernels();

using yt::Finished;
using yt::in_state;
using yt::reached_step;
using yt::run_to_end;
using yt::status_of;

using yt::baseline;
using yt::dataset;
using yt::exported_weights;
using yt::weights_of;
using yt::train_args;

}  // namespace

TEST_CASE("yolo_train trains and writes an Ultralytics-like run folder", "[integration]") {
  yt::TempDir tmp;
  const Finished f = run_to_end(train_args(tmp.path(), {"imgsz=60", "plots=true"}), tmp / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  CHECK_THAT(f.output, Catch::Contains("imgsz=60 must be a multiple of 32, updating to 64"));
  const fs::path dir = tmp / "run";
  for (const char* file : {"args.yaml", "results.csv", "status.json", "train.log", "weights/best.ytckpt"}) {
    CAPTURE(file);
    CHECK(fs::exists(dir / file));
  }
  // The pictures: the first training batches (16 images / batch 4: four, of which 0..2 are
  // drawn, 2 x 2 tiles of 64 px), the final validation's batch (8 images, one batch of 8 as
  // validation doubles the batch: 3 x 3 tiles of 96 px, its rectangular letterbox with the
  // half-stride pad) with labels and predictions.
  for (const auto& [file, side] : std::vector<std::pair<std::string, int>>{{"train_batch0.jpg", 128},
                                                                           {"train_batch1.jpg", 128},
                                                                           {"train_batch2.jpg", 128},
                                                                           {"val_batch0_labels.jpg", 288},
                                                                           {"val_batch0_pred.jpg", 288}}) {
    CAPTURE(file);
    REQUIRE(fs::exists(dir / file));
    const auto image = yolotrain::data::decode_image(dir / file);
    CHECK(image.width == side);
    CHECK(image.height == side);
  }
  for (const char* file : {"PR_curve.png", "F1_curve.png", "P_curve.png", "R_curve.png"}) {
    CAPTURE(file);
    CHECK(yolotrain::data::decode_image(dir / file).width == 2250);
  }
  for (const char* file : {"confusion_matrix.png", "confusion_matrix_normalized.png"}) {
    CAPTURE(file);
    const auto image = yolotrain::data::decode_image(dir / file);
    CHECK(image.width == 3000);
    CHECK(image.height == 2250);
  }
  const auto labels = yolotrain::data::decode_image(dir / "labels.jpg");  // the training set's boxes
  CHECK(labels.width == 1600);
  CHECK(labels.height == 1600);
  CHECK_THAT(f.output, Catch::Contains("Plotting labels to " + (dir / "labels.jpg").string()));
  CHECK_THAT(f.output, Catch::Contains("Results saved to " + dir.string()));
  CHECK_THAT(f.output, Catch::Contains("predictions on validation images: " + (dir / "val_batch0_pred.jpg").string()));
  const auto results = yolotrain::data::decode_image(dir / "results.png");  // redrawn after each epoch
  CHECK(results.width == 2400);
  CHECK(results.height == 1200);
  CHECK_FALSE(fs::exists(dir / "train_batch3.jpg"));
  CHECK_FALSE(fs::exists(dir / "val_batch1_labels.jpg"));
  // The final validation's confusion matrix (4 classes + background; its figures: the metrics tests).
  const std::string confusion = yt::slurp(dir / "confusion_matrix.csv");
  CHECK_THAT(confusion, Catch::StartsWith("Predicted \\ True,rectangle,ellipse,triangle,cross,background\nrectangle,"));
  CHECK(std::count(confusion.begin(), confusion.end(), '\n') == 6);
  const std::string csv = yt::slurp(dir / "results.csv");
  CHECK_THAT(csv, Catch::StartsWith("epoch,time,train/box_loss,"));  // Ultralytics 8.3.9 and later
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);  // header + 2 epochs
  CHECK(std::count(csv.begin(), csv.end(), ',') == 3 * 14);
  const yt::Csv table = yt::read_results(dir / "results.csv");
  CHECK(table.at(0, "time") > 0);  // the training seconds at each epoch's end
  CHECK(table.at(1, "time") > table.at(0, "time"));
  CHECK(status_of(dir)["state"] == "completed");
  const std::string weights = exported_weights(dir, tmp / "export.txt");  // the real export: its file is read
  CHECK(weights.size() > 1000000);
  yolotrain::lifecycle::CheckpointStore store({dir / "weights", 2, "", "last", {}});
  const auto tensors =
      yolotrain::nn::read_safetensors(fs::path(store.checkpoints().front()).replace_extension(".safetensors"));
  CHECK(tensors.front().first == "model.0.conv.weight");
}

TEST_CASE("SIGTERM mid-epoch and resume=true end with byte-identical weights", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(train_args(tmp.path(), {"plots=true"}), tmp / "out1.txt");
  REQUIRE(yt::wait_for_step(dir, 3));
  kill(child.pid, SIGTERM);
  const auto code = yt::wait_exit(child, 120s);
  const std::string out = yt::slurp(tmp / "out1.txt");
  INFO(out);
  CHECK(code == 143);
  CHECK(status_of(dir)["state"] == "stopped");
  const Finished resumed = run_to_end(train_args(tmp.path(), {"plots=true", "resume=true"}), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step"));
  CHECK(weights_of(dir) == baseline());
  // results.png after the resume shows the whole run: it is results.csv's every epoch, drawn.
  const std::string csv = yt::slurp(dir / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  CHECK(yolotrain::data::decode_image(dir / "results.png").pixels == yolotrain::plots::plot_results(csv).pixels);
}

namespace {

// A run with `extra` SIGTERMed at `step` in tmp/run, then resumed: it must end with the weights of
// the uninterrupted run in tmp/straight.
void stop_and_resume_like_straight(const yt::TempDir& tmp, std::vector<std::string> extra, std::int64_t step) {
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(train_args(tmp.path(), extra), tmp / "out1.txt");
  REQUIRE(yt::wait_for_step(dir, step));
  kill(child.pid, SIGTERM);
  CHECK(yt::wait_exit(child, 120s) == 143);
  extra.push_back("resume=true");
  const Finished resumed = run_to_end(train_args(tmp.path(), extra), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step"));
  CHECK(weights_of(dir) == weights_of(tmp / "straight" / "run"));
}

// An uninterrupted run of `extra` in tmp/straight, then the same stopped at `step` and resumed in
// tmp/run: the weights and results.csv (but its `time` column) equal. Returns the uninterrupted run.
Finished straight_and_resumed(const yt::TempDir& tmp, const std::vector<std::string>& extra, std::int64_t step) {
  const Finished straight = run_to_end(train_args(tmp / "straight", extra), tmp / "straight.txt");
  INFO(straight.output);
  REQUIRE(straight.code == 0);
  const std::string csv = yt::slurp(tmp / "straight" / "run" / "results.csv");
  stop_and_resume_like_straight(tmp, extra, step);
  CHECK(yt::without_time(yt::slurp(tmp / "run" / "results.csv")) == yt::without_time(csv));
  return straight;
}

}  // namespace

// With cls_pw (Ultralytics 8.4's class weights, from the training boxes per class): the resumed run
// weighs the classes as the uninterrupted one did.
TEST_CASE("a YOLO11 run with cls_pw: SIGTERM mid-epoch and resume=true end with byte-identical weights",
          "[integration][yolo11]") {
  yt::TempDir tmp;
  const std::vector<std::string> yolo11 = {"model=yolo11n.yaml", "cls_pw=0.5"};
  const Finished straight = run_to_end(train_args(tmp / "straight", yolo11), tmp / "straight.txt");
  INFO(straight.output);
  REQUIRE(straight.code == 0);
  CHECK_THAT(yt::slurp(tmp / "straight" / "run" / "args.yaml"), Catch::Contains("model: \"yolo11n.yaml\""));
  CHECK_THAT(straight.output, Catch::Contains("Class weights: ["));
  stop_and_resume_like_straight(tmp, yolo11, 3);
}

// E2ELoss' weights change per epoch (o2m 0.8, 0.45, 0.1 over 3 epochs): the stop comes in the
// second epoch, so the resumed run must restore the moved weight, not the initial one. MuSGD (what
// 8.4's optimizer=auto picks for long runs): its two momentum buffers per matrix must resume too.
TEST_CASE("a YOLO26 run: SIGTERM in its second epoch and resume=true end with byte-identical weights",
          "[integration][yolo26]") {
  yt::TempDir tmp;
  const std::vector<std::string> yolo26 = {"model=yolo26n.yaml", "epochs=3", "optimizer=MuSGD"};
  const Finished straight = straight_and_resumed(tmp, yolo26, 6);  // 4 batches per epoch: inside epoch 2
  const std::string csv = yt::slurp(tmp / "straight" / "run" / "results.csv");
  CHECK_THAT(csv, Catch::Contains("train/l1_loss") && Catch::Contains("val/l1_loss"));  // reg_max 1: no DFL
  CHECK_THAT(straight.output, Catch::Contains("l1_loss"));
}

// The step CUDA runs (padded targets, the dense assigner, every term over all anchors, nothing
// read back), taken by the CPU: it trains, and a stop and resume end where an uninterrupted run does.
TEST_CASE("device_step=true: a YOLO26 run stopped by SIGTERM and resumed ends with byte-identical weights",
          "[integration][device-step]") {
  yt::TempDir tmp;
  (void)straight_and_resumed(tmp, {"model=yolo26n.yaml", "epochs=2", "device_step=true"}, 5);  // inside epoch 2
  CHECK_THAT(yt::slurp(tmp / "straight" / "run" / "args.yaml"), Catch::Contains("device_step: true"));
}

TEST_CASE("batch=-1 on the CPU trains with batch 16 after AutoBatch's warning, as Ultralytics", "[integration]") {
  yt::TempDir tmp;
  auto args = train_args(tmp.path(), {"epochs=1", "batch=-1"});
  const Finished f = run_to_end(args, tmp / "out.txt");
  INFO(f.output);
  CHECK(f.code == 0);
  CHECK_THAT(f.output,
             Catch::Contains("AutoBatch: Computing optimal batch size for imgsz=64 at 60.0% CUDA memory utilization."));
  CHECK_THAT(f.output, Catch::Contains("AutoBatch: WARNING intended for CUDA devices, using default batch-size 16"));
  CHECK_THAT(yt::slurp(tmp / "run" / "args.yaml"), Catch::Contains("batch: 16"));  // what a resume keeps
  CHECK_THAT(f.output, Catch::Contains("training 1 epochs of 1 batches"));             // 16 images, one batch
}

// Ultralytics 8.4's _model_train puts the frozen layers' BatchNorm in eval every epoch
// (engine/trainer.py:701-707): their running statistics stay those the run started from (a model
// from its YAML: mean 0, variance 1). 8.3 trained them with the rest.
TEST_CASE("freeze=2 keeps the frozen layers' BatchNorm statistics under 8.4, not under 8.3", "[integration]") {
  for (const std::string compat : {"8.4", "8.3"}) {
    CAPTURE(compat);
    yt::TempDir tmp;
    // 2 epochs: 8.4 warms up in the first (one epoch would accumulate nbs / batch = 16 > 4 batches: no step).
    auto args = train_args(tmp.path(), {"freeze=2", "compat=" + compat, "plots=false"});
    args.erase(args.begin());  // the program path
    yolotrain::lifecycle::ControlToken token;
    const auto done = yolotrain::engine::Trainer(yolotrain::engine::TrainConfig::from_args(args)).run(token);
    REQUIRE(done.outcome == yolotrain::engine::RunOutcome::Completed);
    const auto weights = yolotrain::io::read_model_weights((tmp / "run" / "weights" / "best.ytckpt").string());
    std::map<std::string, at::Tensor> t(weights.tensors.begin(), weights.tensors.end());
    REQUIRE(t.count("model.1.bn.running_mean"));
    const bool kept = t["model.0.bn.running_mean"].abs().max().item<float>() == 0 &&
                      t["model.1.bn.running_var"].eq(1).all().item<bool>();
    CHECK(kept == (compat == "8.4"));
    CHECK(t["model.2.cv1.bn.running_mean"].abs().max().item<float>() > 0);  // not frozen: it learned
  }
}

TEST_CASE("a stop inside validation is validated again on resume and changes nothing", "[integration]") {
  yt::TempDir tmp;
  auto config_for = [&](const std::string& resume) {
    auto args = train_args(tmp.path(), {"resume=" + resume});
    args.erase(args.begin());  // the program path
    return yolotrain::engine::TrainConfig::from_args(args);
  };
  yolotrain::lifecycle::ControlToken token;
  yolotrain::engine::TrainerCallbacks callbacks;
  callbacks.on_batch_end = [&](const yolotrain::engine::TrainerProgress& p) {
    if (p.epoch == 0 && p.batch == p.batches) token.request_stop();  // seen first inside validation
  };
  const auto stopped = yolotrain::engine::Trainer(config_for("false"), callbacks).run(token);
  CHECK(stopped.outcome == yolotrain::engine::RunOutcome::Stopped);
  CHECK(stopped.epoch == 0);
  CHECK_FALSE(fs::exists(tmp / "run" / "results.csv"));  // epoch 1 was never validated
  const int threads_after_stop = yt::thread_count();  // the loader and checkpoint threads are gone
  token.reset();
  const auto resumed = yolotrain::engine::Trainer(config_for("true")).run(token);
  CHECK(resumed.outcome == yolotrain::engine::RunOutcome::Completed);
  CHECK(yt::thread_count() <= threads_after_stop);  // a second run leaves no thread behind either
  const std::string csv = yt::slurp(tmp / "run" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  CHECK(weights_of(tmp / "run") == baseline());
}

TEST_CASE("listeners: two on one event are called in order, and one that throws fails the run with a checkpoint",
          "[integration]") {
  yt::TempDir tmp;
  auto args = train_args(tmp.path());
  args.erase(args.begin());  // the program path
  const auto config = yolotrain::engine::TrainConfig::from_args(args);
  std::vector<std::string> calls;
  yolotrain::engine::TrainerCallbacks callbacks;
  callbacks.on_epoch_end = [&](const yolotrain::engine::EpochMetrics& m) {
    calls.push_back("logger " + std::to_string(m.epoch));
  };
  callbacks.on_epoch_end.add(
      [&](const yolotrain::engine::EpochMetrics& m) { calls.push_back("ui " + std::to_string(m.epoch)); });
  callbacks.on_val_end.add(
      [&](const yolotrain::engine::EpochMetrics& m) { calls.push_back("val " + std::to_string(m.epoch)); });
  callbacks.on_train_start.add([&](const yolotrain::engine::TrainerProgress&) { calls.push_back("start"); });
  callbacks.on_train_epoch_start.add([&](const yolotrain::engine::TrainerProgress& p) {
    calls.push_back("epoch " + std::to_string(p.epoch) + " at batch " + std::to_string(p.batch));
  });
  // yolotrain's own listeners come first: status.json has the new state when the program hears of it.
  std::vector<std::string> states;
  callbacks.on_state_change.add([&](yolotrain::lifecycle::RunState s) {
    states.push_back(std::string(yolotrain::lifecycle::to_string(s)) + "=" +
                     status_of(tmp / "run")["state"].get<std::string>());
  });
  // And the step's figures by name; the progress line's figures.
  std::vector<std::string> step_names;
  std::int64_t last_size = 0, timed = 0;
  callbacks.on_batch_end.add([&](const yolotrain::engine::TrainerProgress& p) {
    step_names.clear();
    for (const auto& [name, value] : p.named()) step_names.push_back(name);
    last_size = p.size;
    timed = p.timed_batches;
  });
  callbacks.on_train_end.add([&](const yolotrain::engine::RunResult&) { calls.push_back("end"); });
  // on_fit_epoch_end: after yolotrain's own outputs (the epoch's row is in results.csv already),
  // before the epoch's checkpoint and on_epoch_end.
  callbacks.on_fit_epoch_end.add([&](const yolotrain::engine::EpochMetrics& m) {
    const std::string csv = yt::slurp(tmp / "run" / "results.csv");
    calls.push_back("fit " + std::to_string(m.epoch) + " rows " +
                    std::to_string(std::count(csv.begin(), csv.end(), '\n') - 1));
  });
  yolotrain::lifecycle::ControlToken token;
  const auto done = yolotrain::engine::Trainer(config, callbacks).run(token);
  CHECK(done.outcome == yolotrain::engine::RunOutcome::Completed);
  CHECK(calls == std::vector<std::string>{"start", "epoch 0 at batch 0", "val 1", "fit 1 rows 1", "logger 1", "ui 1",
                                          "epoch 1 at batch 0", "val 2", "fit 2 rows 2", "logger 2", "ui 2", "end"});
  CHECK(states == std::vector<std::string>{"running=running", "completed=completed"});
  CHECK(step_names ==
        std::vector<std::string>{"train/box_loss", "train/cls_loss", "train/dfl_loss", "lr/pg0", "lr/pg1", "lr/pg2"});
  CHECK(last_size == 64);
  CHECK(timed == 4);  // 16 images, batch 4: the epoch's batches, all trained by this process

  // A listener's exception: the run fails, after a checkpoint of where it was.
  yt::TempDir tmp2;
  auto args2 = train_args(tmp2.path());
  args2.erase(args2.begin());
  yolotrain::engine::TrainerCallbacks failing;
  failing.on_batch_end.add([&](const yolotrain::engine::TrainerProgress& p) {
    if (p.step == 3) throw std::runtime_error("the UI crashed");
  });
  token.reset();
  const auto failed = yolotrain::engine::Trainer(yolotrain::engine::TrainConfig::from_args(args2), failing).run(token);
  CHECK(failed.outcome == yolotrain::engine::RunOutcome::Failed);
  CHECK_THAT(failed.reason, Catch::Contains("the UI crashed"));
  CHECK(failed.step == 3);  // where it failed, as the checkpoint says
  REQUIRE_FALSE(failed.last_checkpoint.empty());
  CHECK(fs::exists(failed.last_checkpoint));
}

TEST_CASE("a pause and resume leave the result unchanged", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(train_args(tmp.path()), tmp / "out.txt");
  REQUIRE(yt::wait_for_step(dir, 2));
  kill(child.pid, SIGUSR1);
  REQUIRE(yt::wait_for_state(dir, "paused"));
  const double cpu = yt::cpu_seconds(child.pid);
  std::this_thread::sleep_for(500ms);
  CHECK(yt::cpu_seconds(child.pid) - cpu < 0.05);
  kill(child.pid, SIGUSR2);
  const auto code = yt::wait_exit(child, 300s);
  INFO(yt::slurp(tmp / "out.txt"));
  CHECK(code == 0);
  CHECK(weights_of(dir) == baseline());
}

TEST_CASE("SIGTERM while paused stops at the paused step and the run resumes exactly", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(train_args(tmp.path()), tmp / "out.txt");
  REQUIRE(yt::wait_for_step(dir, 2));
  kill(child.pid, SIGUSR1);
  REQUIRE(yt::wait_for_state(dir, "paused"));
  const std::int64_t paused_at = status_of(dir)["step"];
  kill(child.pid, SIGTERM);
  const auto code = yt::wait_exit(child, 120s);
  INFO(yt::slurp(tmp / "out.txt"));
  CHECK(code == 143);
  const auto status = status_of(dir);
  CHECK(status["state"] == "stopped");
  CHECK(status["step"] == paused_at);  // no step trained after the pause
  CHECK(status["last_checkpoint"]["step"] == paused_at);
  const Finished resumed = run_to_end(train_args(tmp.path(), {"resume=true"}), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK(weights_of(dir) == baseline());
}

TEST_CASE("bad yolo_train arguments exit 2 with a clear message", "[integration]") {
  yt::TempDir tmp;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{YOLO_TRAIN_PATH, "lr=0.1"}, "similar arguments: lr0=0.01"},
      {{YOLO_TRAIN_PATH, "batch=0"}, "'batch'"},
      {{YOLO_TRAIN_PATH, "data=/nonexistent/data.yaml", "project=" + (tmp / "p").string()}, "/nonexistent/data.yaml"},
      {{YOLO_TRAIN_PATH, "fly"}, "unknown mode 'fly'"},
      {train_args(tmp / "p", {"model=" + (tmp / "bad.yaml").string()}), "bad.yaml"},
      {train_args("/proc/yolotrain-runs"), "cannot create the run folder /proc/yolotrain-runs/run"},
      {train_args(tmp / "p", {"device=mps"}), "device=mps: expected cpu, cuda, cuda:N"},
      {train_args(tmp / "p", {"compat=8.2"}), "'compat'"},
      {train_args(tmp / "p", {"model=yolo26n.yaml", "compat=8.3"}), "exists only since Ultralytics 8.4"},
  };
  yolotrain::lifecycle::atomic_write(tmp / "bad.yaml", "nc: 3\nbackbone:\n  - [-1, 1, Nope, [16, 3, 2]]\nhead: []\n");
  for (const auto& [args, message] : cases) {
    const Finished f = run_to_end(args, tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains(message));
  }
}

TEST_CASE("resuming a finished run says so and changes nothing", "[integration]") {
  yt::TempDir tmp;
  REQUIRE(run_to_end(train_args(tmp.path(), {"epochs=1"}), tmp / "out0.txt").code == 0);
  const std::string csv = yt::slurp(tmp / "run" / "results.csv");
  const Finished f = run_to_end(train_args(tmp.path(), {"epochs=1", "resume=true"}), tmp / "out.txt");
  INFO(f.output);
  CHECK(f.code == 2);
  CHECK_THAT(f.output, Catch::Contains("already finished"));
  CHECK(yt::slurp(tmp / "run" / "results.csv") == csv);
}

TEST_CASE("yolo_train survives SIGKILL at random moments and resumes exactly", "[chaos]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  std::mt19937 rng(7);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<std::string> extra = {"save_interval=0.05", "plots=true"};  // killed while drawing too
    if (fs::exists(dir / "weights")) extra.push_back("resume=true");
    yt::Child child = yt::spawn(train_args(tmp.path(), extra), tmp / "out.txt");
    // SIGKILLed at a random moment of its life (startup ~0.6 s, then training and checkpoint writes
    // every 0.05 s), unless it ended first: nothing waits on a run that already finished.
    yt::wait_exit(child, std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 2500)(rng)));
    if (!fs::exists(dir / "weights")) continue;
    yolotrain::lifecycle::CheckpointStore store({dir / "weights", 2, "", "last", {}});
    CHECK(store.load_latest().skipped.empty());
  }
  const Finished f = run_to_end(train_args(tmp.path(), {"resume=true"}), tmp / "final.txt");
  INFO(f.output);
  const bool finished_already = f.output.find("already finished") != std::string::npos;
  CHECK((f.code == 0 || finished_already));
  CHECK(weights_of(dir) == baseline());
}

TEST_CASE("bad values and unusable datasets exit 2 and imgsz is rounded up", "[integration]") {
  yt::TempDir tmp;
  fs::create_directories(tmp / "empty" / "images" / "train");
  yolotrain::lifecycle::atomic_write(tmp / "empty" / "images" / "train" / "broken.jpg", "not a jpeg");
  yolotrain::lifecycle::atomic_write(tmp / "empty" / "data.yaml",
                                     "path: .\ntrain: images/train\nval: images/train\nnames: [a]\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {train_args(tmp / "p", {"batch=0"}), "batch"},
      {train_args(tmp / "p", {"data=" + (tmp / "empty" / "data.yaml").string()}), "no usable image"},
      {train_args(tmp / "p", {"cuda_graph=true"}),
       "cuda_graph=true: the run is not on a CUDA device; use cuda_graph=auto"},
  };
  for (const auto& [args, message] : cases) {
    const Finished f = run_to_end(args, tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains(message));
  }
  const Finished f =
      run_to_end(train_args(tmp / "q", {"imgsz=100", "epochs=1", "fraction=0.5", "plots=false"}), tmp / "out.txt");
  INFO(f.output);
  CHECK(f.code == 0);
  CHECK(fs::exists(tmp / "q" / "run" / "results.csv"));
  CHECK_FALSE(fs::exists(tmp / "q" / "run" / "confusion_matrix.csv"));  // plots=false writes none
  CHECK_THAT(f.output, Catch::Contains("imgsz=100 must be a multiple of 32, updating to 128"));
  CHECK_THAT(f.output, Catch::Contains("training on the first 8 images"));
}

TEST_CASE("a corrupt newest checkpoint falls back to the previous one and still resumes exactly", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(train_args(tmp.path(), {"save_interval=0.01"}), tmp / "out1.txt");
  REQUIRE(yt::wait_for_step(dir, 2));
  kill(child.pid, SIGTERM);
  CHECK(yt::wait_exit(child, 120s) == 143);
  yolotrain::lifecycle::CheckpointStore store({dir / "weights", 2, "", "last", {}});
  const auto files = store.checkpoints();
  REQUIRE(files.size() == 2);
  std::string bytes = yt::slurp(files.front());
  bytes[bytes.size() / 2] ^= 0x5a;  // one flipped byte in the payload
  yolotrain::lifecycle::atomic_write(files.front(), bytes);
  const Finished resumed = run_to_end(train_args(tmp.path(), {"resume=true"}), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resume: skipping"));
  CHECK_THAT(resumed.output, Catch::Contains(files.front().filename().string()));
  CHECK(weights_of(dir) == baseline());
}

TEST_CASE("the Ultralytics form model=weights/last.pt resume=True continues the run", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(train_args(tmp.path()), tmp / "out1.txt");
  REQUIRE(yt::wait_for_step(dir, 3));
  kill(child.pid, SIGINT);
  CHECK(yt::wait_exit(child, 120s) == 130);
  const Finished resumed =
      run_to_end({YOLO_TRAIN_PATH, "model=" + (dir / "weights" / "last.pt").string(), "resume=True"}, tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step"));
  CHECK(weights_of(dir) == baseline());
}

TEST_CASE("plots=false draws nothing and trains the same weights as the run that draws", "[integration]") {
  yt::TempDir tmp;
  const Finished f = run_to_end(train_args(tmp.path(), {"plots=false"}), tmp / "out.txt");  // train_args' own
  INFO(f.output);
  REQUIRE(f.code == 0);
  for (const auto& e : fs::directory_iterator(tmp / "run")) {
    CAPTURE(e.path());
    CHECK(e.path().extension() != ".jpg");
    CHECK(e.path().extension() != ".png");
    CHECK(e.path().filename() != "confusion_matrix.csv");
  }
  CHECK(weights_of(tmp / "run") == baseline({"plots=true"}));  // a run that draws
}

TEST_CASE("a picture that cannot be written is one warning and the run trains the same weights", "[integration]") {
  yt::TempDir tmp;
  fs::create_directories(tmp / "run" / "labels.jpg");  // folders where two pictures should go
  fs::create_directories(tmp / "run" / "results.png");
  const Finished f = run_to_end(train_args(tmp.path(), {"exist_ok=true", "plots=true"}), tmp / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  const auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (auto at = f.output.find(s); at != std::string::npos; at = f.output.find(s, at + 1)) ++n;
    return n;
  };
  CHECK(count("WARNING plot labels.jpg not written: ") == 1);
  CHECK(count("WARNING plot results.png not written: ") == 1);  // drawn after each of 2 epochs
  CHECK(count("WARNING plot ") == 2);
  CHECK(fs::exists(tmp / "run" / "val_batch0_pred.jpg"));  // the others are written
  CHECK(weights_of(tmp / "run") == baseline());
}

TEST_CASE("yolo_train val and export work on a finished run and the textfile reports it", "[integration]") {
  yt::TempDir tmp;
  const fs::path prom = tmp / "yolotrain.prom";
  const Finished f = run_to_end(
      train_args(tmp.path(), {"epochs=1", "metrics_file=" + prom.string(), "freeze=3", "single_cls=true", "amp=bf16",
                              "multi_scale=true", "cutmix=0.5"}),
      tmp / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  CHECK_THAT(f.output, Catch::Contains("freeze=3: "));
  CHECK_THAT(f.output,
             Catch::Contains("      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"));
  CHECK_THAT(f.output, Catch::Contains("1/1"));
  CHECK_THAT(f.output, Catch::Contains("                 Class     Images  Instances      Box(P"));
  const std::string text = yt::slurp(prom);
  CHECK_THAT(text, Catch::Contains("state=\"completed\"} 1"));
  CHECK_THAT(text, Catch::Contains("yolotrain_step{"));
  // status.json and the textfile hold the epoch's figures by results.csv's names (and fitness).
  std::istringstream csv(yt::slurp(tmp / "run" / "results.csv"));
  std::string header, row;
  REQUIRE(std::getline(csv, header));
  REQUIRE(std::getline(csv, row));
  std::istringstream names(header), values(row);
  const auto metrics = status_of(tmp / "run")["metrics"];
  int columns = 0;
  for (std::string name, value; std::getline(names, name, ',') && std::getline(values, value, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    if (name == "epoch" || name == "time") continue;
    CAPTURE(name);
    REQUIRE(metrics.contains(name));
    CHECK(metrics[name].get<double>() == Approx(std::stod(value)).epsilon(1e-4).margin(1e-9));  // csv: %.6g
    CHECK_THAT(text, Catch::Contains(",name=\"" + name + "\"} "));
    ++columns;
  }
  CHECK(columns == 13);
  CHECK(metrics.contains("fitness"));
  CHECK_THAT(text,
             Catch::Contains("yolotrain_metric{run=\"" + (tmp / "run").string() + "\",name=\"metrics/mAP50(B)\"} "));
  const fs::path best = tmp / "run" / "weights" / "best.ytckpt";
  const Finished val = run_to_end({YOLO_TRAIN_PATH, "val", "model=" + best.string()}, tmp / "val.txt");
  INFO(val.output);
  CHECK(val.code == 0);
  CHECK_THAT(val.output, Catch::Contains("                   all          8"));
  // Its pictures go to the run's project, val (as Ultralytics' runs/detect/val), then val2.
  CHECK_THAT(val.output, Catch::Contains("Results saved to " + (tmp / "val").string()));
  for (const char* file :
       {"val_batch0_labels.jpg", "val_batch0_pred.jpg", "confusion_matrix.png", "confusion_matrix_normalized.png",
        "PR_curve.png", "F1_curve.png", "P_curve.png", "R_curve.png"}) {
    CAPTURE(file);
    CHECK(yolotrain::data::decode_image(tmp / "val" / file).width >= 192);  // val_batch0: 2 x 2 tiles of 96 (batch 4)
  }
  CHECK_THAT(yt::slurp(tmp / "val" / "confusion_matrix.csv"), Catch::StartsWith("Predicted \\ True,item,background\n"));
  CHECK_FALSE(fs::exists(tmp / "val" / "weights"));
  REQUIRE(run_to_end({YOLO_TRAIN_PATH, "export", "model=" + best.string()}, tmp / "export.txt").code == 0);
  const Finished val2 =
      run_to_end({YOLO_TRAIN_PATH, "val", "model=" + (tmp / "run" / "weights" / "best.safetensors").string(),
                  "data=" + dataset().string(), "imgsz=64", "batch=4", "threads=1", "single_cls=true",
                  "project=" + tmp.path().string()},
                 tmp / "val2.txt");
  INFO(val2.output);
  CHECK_THAT(val2.output, Catch::Contains("Results saved to " + (tmp / "val2").string()));
  // A folder for the pictures that cannot be made costs the pictures only.
  std::ofstream(tmp / "a_file") << "x";
  const Finished val3 = run_to_end(
      {YOLO_TRAIN_PATH, "val", "model=" + best.string(), "project=" + (tmp / "a_file").string()}, tmp / "val3.txt");
  INFO(val3.output);
  CHECK(val3.code == 0);
  CHECK_THAT(val3.output, Catch::Contains("                   all          8"));
  CHECK_THAT(val3.output, Catch::Contains("WARNING plot folder " + (tmp / "a_file" / "val").string() + " not made: "));
  CHECK(val2.code == 0);
  // The same weights and settings give the same table from either file.
  const auto table = [](const std::string& out) { return out.substr(0, out.find("Speed:")); };
  CHECK(table(val2.output) == table(val.output));
  const Finished bad = run_to_end({YOLO_TRAIN_PATH, "val", "model=" + (tmp / "nope.ytckpt").string()}, tmp / "bad.txt");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.output, Catch::Contains("no such file"));
}

TEST_CASE("yolo_train trains on coco8 end to end", "[integration]") {
  const fs::path coco8 = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / "coco8" / "data.yaml";
  if (!fs::exists(coco8)) {
    WARN("skipped: " << coco8.string() << " is absent (the shared datasets folder is not beside the checkout)");
    return;
  }
  yt::TempDir tmp;
  const Finished f = run_to_end({YOLO_TRAIN_PATH, "data=" + coco8.string(), "epochs=2", "imgsz=96", "batch=4",
                                 "threads=1", "project=" + tmp.path().string(), "name=coco8"},
                                tmp / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  const std::string csv = yt::slurp(tmp / "coco8" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  const auto j = status_of(tmp / "coco8");
  CHECK(j["state"] == "completed");
  CHECK(j["step"] == 2);
  // Every picture Ultralytics' trainer writes, decoded, at its size (4 training images in one
  // batch of 4: a 2 x 2 mosaic of 96 px; the 4 validation images in one batch, their rectangular
  // letterbox 128 px with the half-stride pad).
  for (const auto& [file, width, height] : std::vector<std::tuple<std::string, int, int>>{
           {"labels.jpg", 1600, 1600}, {"train_batch0.jpg", 192, 192}, {"val_batch0_labels.jpg", 256, 256},
           {"val_batch0_pred.jpg", 256, 256}, {"results.png", 2400, 1200}, {"PR_curve.png", 2250, 1500},
           {"F1_curve.png", 2250, 1500}, {"P_curve.png", 2250, 1500}, {"R_curve.png", 2250, 1500},
           {"confusion_matrix.png", 3000, 2250}, {"confusion_matrix_normalized.png", 3000, 2250}}) {
    CAPTURE(file);
    const auto image = yolotrain::data::decode_image(tmp / "coco8" / file);
    CHECK(image.width == width);
    CHECK(image.height == height);
  }
  CHECK_THAT(yt::slurp(tmp / "coco8" / "confusion_matrix.csv"), Catch::StartsWith("Predicted \\ True,person,bicycle,"));
  const Finished val = run_to_end(
      {YOLO_TRAIN_PATH, "val", "model=" + (tmp / "coco8" / "weights" / "best.ytckpt").string()}, tmp / "val.txt");
  INFO(val.output);
  CHECK(val.code == 0);
  CHECK_THAT(val.output, Catch::Contains("                   all          4         17"));
}

// The curve this checks (yolo_train data=shapes imgsz=96 epochs=12 batch=16, 2 threads, seed 0;
// the plainer set of issue 13), measured here with 8.4's warm-up (2026-12-07): mAP50 0 until
// epoch 5, 0.109 at 7, 0.357 at 9, 0.471 at 12 (15 epochs reached 0.478: the 3 more added
// nothing the assertions need); box / cls / dfl loss 6.80 / 4.76 / 4.23 at epoch 1 -> 2.16 / 1.71
// / 1.62 at epoch 12 (0.32-0.38 of the first). The thresholds leave a margin of about 2x on the
// mAP and 1.6x on the fall of the losses. ~1 minute.
TEST_CASE("yolo_train learns on the built-in shapes set", "[integration]") {
  yt::TempDir tmp;
  const Finished f = run_to_end({YOLO_TRAIN_PATH, "data=shapes", "imgsz=96", "epochs=12", "batch=16", "threads=2",
                                 "workers=2", "project=" + tmp.path().string(), "name=shapes", "verbose=false",
                                 "plots=false"},  // the figures are the test's, not the pictures
                                tmp / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  const yt::Csv csv = yt::read_results(tmp / "shapes" / "results.csv");
  REQUIRE(csv.rows.size() == 12);
  double best_map50 = 0;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) best_map50 = std::max(best_map50, csv.at(r, "metrics/mAP50(B)"));
  CHECK(best_map50 >= 0.25);
  for (const char* loss : {"train/box_loss", "train/cls_loss", "train/dfl_loss"}) {
    CAPTURE(loss);
    CHECK(csv.at(11, loss) < 0.6 * csv.at(0, loss));
  }
  // `val` finds the built-in set from the checkpoint's data=shapes and project.
  const Finished val = run_to_end(
      {YOLO_TRAIN_PATH, "val", "model=" + (tmp / "shapes" / "weights" / "best.ytckpt").string()}, tmp / "val.txt");
  INFO(val.output);
  CHECK(val.code == 0);
  CHECK_THAT(val.output, Catch::Contains("                   all         64"));
}

TEST_CASE("a second trainer on a run folder in use exits 2 naming the owner, and a SIGKILLed owner frees it at once",
          "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child first = yt::spawn(train_args(tmp.path(), {"epochs=300"}), tmp / "first.txt");
  REQUIRE(yt::wait_for_step(dir, 6));  // past epoch 1: a checkpoint exists
  const std::string csv_before = yt::slurp(dir / "results.csv");
  const Finished second = run_to_end(train_args(tmp.path(), {"epochs=300", "resume=true"}), tmp / "second.txt");
  INFO(second.output);
  CHECK(second.code == 2);
  CHECK_THAT(second.output, Catch::Contains("is in use by another process (PID " + std::to_string(first.pid) + ";"));
  CHECK_THAT(second.output, !Catch::Contains("resumed from step"));
  CHECK(status_of(dir)["state"] == "running");  // the owner's status is its own
  CHECK(yt::slurp(dir / "results.csv").rfind(csv_before, 0) == 0);  // nothing appended by the second
  kill(first.pid, SIGKILL);
  CHECK(yt::wait_exit(first, 60s) == 128 + SIGKILL);
  // At once: no stale lock to wait for or remove.
  yt::Child third = yt::spawn(train_args(tmp.path(), {"epochs=300", "resume=true"}), tmp / "third.txt");
  REQUIRE(yt::wait_until([&] { return yt::slurp(tmp / "third.txt").find("resumed from step") != std::string::npos; },
                         60s));
  kill(third.pid, SIGTERM);
  CHECK(yt::wait_exit(third, 60s) == 143);
}

TEST_CASE("resume= a path that does not exist, or is no checkpoint, exits 2 and trains nothing", "[integration]") {
  yt::TempDir tmp;
  const Finished missing =
      run_to_end(train_args(tmp.path(), {"resume=" + (tmp / "nope.ytckpt").string()}), tmp / "a.txt");
  INFO(missing.output);
  CHECK(missing.code == 2);
  CHECK_THAT(missing.output, Catch::Contains("resume=" + (tmp / "nope.ytckpt").string() + ": no such checkpoint"));
  std::ofstream(tmp / "weights.pt") << "not a checkpoint";
  const Finished other = run_to_end(train_args(tmp.path(), {"resume=" + (tmp / "weights.pt").string()}), tmp / "b.txt");
  INFO(other.output);
  CHECK(other.code == 2);
  CHECK_THAT(other.output, Catch::Contains("not a yolo_train checkpoint"));
  CHECK_FALSE(fs::exists(tmp / "run"));
}

TEST_CASE("broken label files are named with their reasons in train.log", "[integration]") {
  yt::TempDir tmp;
  const fs::path yaml =
      yolotrain::data::write_shapes_dataset(tmp / "data", yolotrain::data::ShapesOptions{0, 8, 4, 64, 90});
  std::vector<fs::path> labels;
  for (const auto& e : fs::directory_iterator(tmp / "data" / "labels" / "train")) labels.push_back(e.path());
  std::sort(labels.begin(), labels.end());
  REQUIRE(labels.size() >= 4);
  const std::vector<std::pair<std::string, std::string>> broken = {
      {"0 nan 0.5 0.2 0.2\n", "not a finite number"},
      {"0 -0.5 0.5 0.2 0.2\n", "out of [0, 1]"},
      {"0 0.5 0.5 0.2 7\n", "out of [0, 1]"},
      {"0 0.5 0.5 0.2\n", "4 columns, expected 5"}};
  for (std::size_t i = 0; i < broken.size(); ++i) std::ofstream(labels[i]) << broken[i].first;
  const Finished f = run_to_end({YOLO_TRAIN_PATH, "data=" + yaml.string(), "epochs=1", "imgsz=64", "batch=4",
                                 "workers=1", "threads=1", "project=" + tmp.path().string(), "name=run"},
                                tmp / "out.txt");
  INFO(f.output);
  CHECK(f.code == 0);
  CHECK_THAT(f.output, Catch::Contains("4 corrupt"));
  const std::string log = yt::slurp(tmp / "run" / "train.log");
  for (std::size_t i = 0; i < broken.size(); ++i) {
    CAPTURE(labels[i]);
    CHECK_THAT(log, Catch::Contains(labels[i].string() + ": ignoring corrupt image/label: line 1: ") &&
                        Catch::Contains(broken[i].second));
    CHECK_THAT(f.output, Catch::Contains(labels[i].string()));
  }
}
