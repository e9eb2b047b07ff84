#pragma once
// The yolo_train runs the integration tests compare: the arguments of a small run on the tiny
// shapes set, its exported weights, and those of the uninterrupted run (computed once per process).
#include "catch.hpp"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "tiny_shapes.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"

namespace yolotrain::test {

namespace fs = std::filesystem;

inline const fs::path& dataset() { return tiny_shapes_dataset(); }

inline std::vector<std::string> train_args(const fs::path& project, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {YOLO_TRAIN_PATH, "data=" + dataset().string(), "epochs=2", "imgsz=64", "batch=4",
                                "workers=2", "threads=1", "project=" + project.string(), "name=run",
                                "save_interval=0", "status_interval=0.01",  // status.json: every step
                                "device=cpu"};  // CPU-exact checks, also on a machine with a GPU
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The exported EMA weights of the run's newest checkpoint, as bytes.
inline std::string exported_weights(const fs::path& run_dir, const fs::path& out) {
  yolotrain::lifecycle::CheckpointStore store({run_dir / "weights", 2, "", "last", {}});
  const auto newest = store.checkpoints();
  REQUIRE_FALSE(newest.empty());
  const Finished f = run_to_end({YOLO_TRAIN_PATH, "export", "model=" + newest.front().string()}, out);
  INFO(f.output);
  REQUIRE(f.code == 0);
  return slurp(fs::path(newest.front()).replace_extension(".safetensors"));
}

// The exported weights of an uninterrupted run (computed once).
inline const std::string& baseline() {
  static TempDir dir;
  static const std::string weights = [] {
    const Finished f = run_to_end(train_args(dir.path()), dir / "out.txt");
    INFO(f.output);
    REQUIRE(f.code == 0);
    return exported_weights(dir / "run", dir / "export.txt");
  }();
  return weights;
}

/// The command line of a run in `project` with `extra` arguments (a task's data and model).
using RunArgs = std::function<std::vector<std::string>(const fs::path& project, std::vector<std::string> extra)>;

/// A run of `args(tmp, extra)` stopped by SIGTERM once `step` steps are done (exit 143), then resumed
/// with resume=true: it says so, and its weights are the uninterrupted run's in `straight`, to the byte.
inline void check_stopped_and_resumed(const TempDir& tmp, const RunArgs& args, const std::vector<std::string>& extra,
                                      std::int64_t step, const fs::path& straight) {
  using namespace std::chrono_literals;
  const fs::path dir = tmp / "run";
  Child child = spawn(args(tmp.path(), extra), tmp / "out1.txt");
  REQUIRE(wait_for_step(dir, step));
  kill(child.pid, SIGTERM);
  CHECK(wait_exit(child, 120s) == 143);
  std::vector<std::string> again = extra;
  again.push_back("resume=true");
  const Finished resumed = run_to_end(args(tmp.path(), again), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step"));
  CHECK(exported_weights(dir, tmp / "export.txt") == exported_weights(straight, tmp / "export-straight.txt"));
}

}  // namespace yolotrain::test
