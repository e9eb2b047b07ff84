// Bad input and bad timing as users' data and schedulers produce them: decompression bombs among
// the images, and signals that arrive while a finished process is exiting.
#include <signal.h>
#include <sys/wait.h>

#include "catch.hpp"

#include <cstdlib>
#include <fstream>
#include <thread>

#include "image_bombs.hpp"
#include "test_support.hpp"
#include "tiny_shapes.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

// A blindly decoded bomb alone would take 40000 * 40000 * 3 bytes: 4.6 GB.
constexpr long kPeakRssLimitKb = 1536L * 1024;

// The tiny shapes set with a PNG and a JPEG bomb (40000 x 40000 declared) among its training images.
fs::path shapes_with_bombs(const yt::TempDir& tmp) {
  fs::copy(yt::tiny_shapes_dataset().parent_path(), tmp / "ds", fs::copy_options::recursive);
  fs::remove(tmp / "ds/labels/train.yolotrain.cache");
  yt::write_png_bomb(tmp / "ds/images/train/bomb_png.png", 40000, 40000);
  yt::write_jpeg_bomb(tmp / "ds/images/train/bomb_jpg.jpg", 40000, 40000);
  for (const char* stem : {"bomb_png", "bomb_jpg"}) {
    std::ofstream(tmp / "ds/labels/train" / (std::string(stem) + ".txt")) << "0 0.5 0.5 0.2 0.2\n";
  }
  return tmp / "ds/data.yaml";
}

// Waits for `marker` in the child's output, then sends `signo` every millisecond until the
// child exits; returns its exit status (128 + signal when a signal killed it).
// Debian 13's libtorch links OpenMPI and so UCX, whose libucs takes SIGHUP as its debug signal when
// it loads and gives SIGHUP back its default action while the process exits, after the lifecycle's
// ignore: a SIGHUP in that last moment would end the process with 129. UCX_DEBUG_SIGNO=0 turns
// UCX's handler off, as docs/lifecycle.md tells users of such a libtorch; the children inherit it.
void without_ucx_debug_signal() { setenv("UCX_DEBUG_SIGNO", "0", 1); }

int exit_status_under_late_signals(yt::Child& child, int signo, const std::string& marker) {
  REQUIRE(yt::wait_until([&] { return yt::slurp(child.out).find(marker) != std::string::npos; }, 3min, 1ms));
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < give_up) {
    int status = 0;
    if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
      child.pid = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    kill(child.pid, signo);
    std::this_thread::sleep_for(1ms);
  }
  FAIL("the process did not exit within 60 s of its last line");
  return -1;
}

}  // namespace

TEST_CASE("images declaring more pixels than the limit are named and skipped in training and memory stays low",
          "[integration]") {
  yt::TempDir tmp;
  const fs::path data = shapes_with_bombs(tmp);
  const yt::Finished f =
      yt::run_to_end({YOLO_TRAIN_PATH, "data=" + data.string(), "epochs=1", "imgsz=64", "batch=4", "workers=2",
                      "threads=1", "plots=false", "project=" + (tmp / "runs").string(), "name=run"},
                     tmp / "out.txt");
  INFO(f.output);
  WARN("yolo_train with two image bombs in its training set: peak RSS " << f.peak_rss_kb / 1024 << " MB");
  CHECK(f.code == 0);  // as for other bad files: named, skipped, the run goes on
  for (const char* name : {"bomb_png.png", "bomb_jpg.jpg"}) {
    CHECK_THAT(f.output, Catch::Contains(name) &&
                             Catch::Contains("image size 40000x40000 (1600000000 pixels) exceeds the limit"));
  }
  CHECK(f.peak_rss_kb > 0);
  CHECK(f.peak_rss_kb < kPeakRssLimitKb);
}

TEST_CASE("a predict source with image bombs names and skips them and memory stays low", "[integration]") {
  yt::TempDir tmp;
  const fs::path data = shapes_with_bombs(tmp);
  // A model to predict with: one epoch on the clean tiny set.
  const yt::Finished trained =
      yt::run_to_end({YOLO_TRAIN_PATH, "data=" + yt::tiny_shapes_dataset().string(), "epochs=1", "imgsz=64",
                      "batch=4", "workers=1", "threads=1", "plots=false", "project=" + (tmp / "runs").string(),
                      "name=train"},
                     tmp / "train.txt");
  REQUIRE(trained.code == 0);
  fs::create_directories(tmp / "src");
  for (const char* name : {"bomb_png.png", "bomb_jpg.jpg"})
    fs::copy_file(tmp / "ds/images/train" / name, tmp / "src" / name);
  fs::copy_file(fs::directory_iterator(yt::tiny_shapes_dataset().parent_path() / "images/val")->path(),
                tmp / "src/good.jpg");
  const yt::Finished f = yt::run_to_end(
      {YOLO_TRAIN_PATH, "predict", "model=" + (tmp / "runs/train/weights/best.ytckpt").string(),
       "source=" + (tmp / "src").string(), "imgsz=64", "project=" + (tmp / "runs").string(), "threads=1"},
      tmp / "out.txt");
  INFO(f.output);
  WARN("yolo_train predict over two image bombs and one image: peak RSS " << f.peak_rss_kb / 1024 << " MB");
  CHECK(f.code == 1);  // as for an unreadable image: the others are predicted, the exit says one failed
  CHECK_THAT(f.output, Catch::Contains("bomb_png.png: cannot be read, skipped") &&
                           Catch::Contains("bomb_jpg.jpg: cannot be read, skipped") &&
                           Catch::Contains("exceeds the limit of 178956970 pixels"));
  CHECK(fs::exists(tmp / "runs/predict/good.jpg"));
  CHECK(f.peak_rss_kb > 0);
  CHECK(f.peak_rss_kb < kPeakRssLimitKb);
}

TEST_CASE("signals arriving while a finished custom_loop exits leave its exit status 0", "[integration]") {
  without_ucx_debug_signal();
  yt::TempDir tmp;
  int run = 0;
  for (int signo : {SIGUSR2, SIGHUP, SIGTERM}) {
    for (int repeat = 0; repeat < 4; ++repeat, ++run) {
      CAPTURE(signo, repeat);
      const fs::path dir = tmp / ("run" + std::to_string(run));
      yt::Child child = yt::spawn({CUSTOM_LOOP_PATH, "--dir", dir.string(), "--steps", "20", "--threads", "1"},
                                  tmp / ("out" + std::to_string(run) + ".txt"));
      const int code = exit_status_under_late_signals(child, signo, "completed ");
      INFO(yt::slurp(child.out));
      CHECK(code == 0);
    }
  }
}

TEST_CASE("signals arriving while a finished yolo_train exits leave its exit status 0", "[integration]") {
  without_ucx_debug_signal();
  yt::TempDir tmp;
  int run = 0;
  for (int signo : {SIGUSR2, SIGHUP, SIGTERM}) {
    CAPTURE(signo);
    yt::Child child = yt::spawn({YOLO_TRAIN_PATH, "data=" + yt::tiny_shapes_dataset().string(), "epochs=1",
                                 "imgsz=64", "batch=8", "workers=1", "threads=1", "plots=false", "val=false",
                                 "project=" + (tmp / "runs").string(), "name=run" + std::to_string(run)},
                                tmp / ("out" + std::to_string(run) + ".txt"));
    ++run;
    const int code = exit_status_under_late_signals(child, signo, "completed (");
    INFO(yt::slurp(child.out));
    CHECK(code == 0);
  }
}
