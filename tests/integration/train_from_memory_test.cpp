// examples/train_from_memory: the trainer on a program's in-memory samples, with real signals.
#include <ATen/ATen.h>

#include "catch.hpp"
#include <signal.h>

#include "test_support.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> memory_args(const fs::path& project, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {TRAIN_FROM_MEMORY_PATH, "train=16",       "val=8",       "size=64",
                                "epochs=2",            "imgsz=64",       "batch=4",     "workers=2",
                                "threads=1",           "project=" + project.string(), "name=run",
                                "save_interval=0",     "status_interval=0.01"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("in-memory samples: a run stopped by SIGTERM resumes to byte-identical weights", "[integration][memory]") {
  yt::TempDir whole, tmp;
  const yt::Finished uninterrupted = yt::run_to_end(memory_args(whole.path()), whole / "out.txt");
  INFO(uninterrupted.output);
  REQUIRE(uninterrupted.code == 0);
  CHECK_THAT(uninterrupted.output, Catch::Contains("train: 16 images"));
  CHECK_THAT(yt::slurp(whole / "run/args.yaml"), Catch::Contains("data: \"memory\""));
  const std::string expected = yt::weights_of(whole / "run");

  yt::Child child = yt::spawn(memory_args(tmp.path()), tmp / "out1.txt");
  REQUIRE(yt::wait_for_step(tmp / "run", 3));
  kill(child.pid, SIGTERM);
  CHECK(yt::wait_exit(child, 120s) == 143);
  const yt::Finished resumed = yt::run_to_end(memory_args(tmp.path(), {"resume=true"}), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step"));
  CHECK(yt::weights_of(tmp / "run") == expected);

  // yolo_train cannot resume it: the samples live in the program.
  const yt::Finished cli = yt::run_to_end({YOLO_TRAIN_PATH, "resume=" + (tmp / "run").string(), "epochs=5"},
                                          tmp / "out3.txt");
  CHECK(cli.code == 2);
  CHECK_THAT(cli.output, Catch::Contains("data=memory: this run trained on a program's in-memory samples"));
}
