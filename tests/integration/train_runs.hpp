#pragma once
// The yolo_train runs the integration tests compare: the arguments of a small run on the tiny
// shapes set, its exported weights, and those of the uninterrupted run (trained once per build).
#include "catch.hpp"

#include <fcntl.h>
#include <map>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "tiny_shapes.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"

namespace yolotrain::test {

namespace fs = std::filesystem;

inline const fs::path& dataset() { return tiny_shapes_dataset(); }

inline std::vector<std::string> train_args(const fs::path& project, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {YOLO_TRAIN_PATH, "data=" + dataset().string(), "epochs=2", "imgsz=64", "batch=4",
                                "workers=2", "threads=1", "project=" + project.string(), "name=run",
                                "save_interval=0", "status_interval=0.01",  // status.json: every step
                                "device=cpu",   // CPU-exact checks, also on a machine with a GPU
                                // The pictures cost more than the 2 epochs' training (1.6 s of CPU
                                // against 1.5): only the tests that look at them, or at drawing
                                // beside a stop, draw them (plots=true).
                                "plots=false"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The EMA weights of the run's newest checkpoint as bytes (each tensor's name, type, shape and
// data): what `yolo_train export` writes from it (io::read_model_weights, as the export reads it),
// read in this process — an export is one process start more per comparison.
inline std::string weights_of(const fs::path& run_dir) {
  yolotrain::lifecycle::CheckpointStore store({run_dir / "weights", 2, "", "last", {}});
  const auto newest = store.checkpoints();
  REQUIRE_FALSE(newest.empty());
  const io::ModelWeights w = io::read_model_weights(newest.front());
  std::string bytes;
  for (const auto& [name, tensor] : w.tensors) {
    const at::Tensor t = tensor.contiguous();
    bytes += name + " " + std::string(t.dtype().name()) + " " + c10::str(t.sizes()) + "\n";
    bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  return bytes;
}

// The run's newest checkpoint exported by `yolo_train export` (its .safetensors beside it), as bytes.
inline std::string exported_weights(const fs::path& run_dir, const fs::path& out) {
  yolotrain::lifecycle::CheckpointStore store({run_dir / "weights", 2, "", "last", {}});
  const auto newest = store.checkpoints();
  REQUIRE_FALSE(newest.empty());
  const Finished f = run_to_end({YOLO_TRAIN_PATH, "export", "model=" + newest.front().string()}, out);
  INFO(f.output);
  REQUIRE(f.code == 0);
  return slurp(fs::path(newest.front()).replace_extension(".safetensors"));
}

// What a yolo_train run here depends on besides its arguments: this test program (the datasets it
// writes), yolo_train and the libraries of this build, each by size and modification time.
inline std::string build_stamp() {
  std::vector<std::string> parts;
  const auto add = [&](const fs::path& p) {
    parts.push_back(p.string() + " " + std::to_string(fs::file_size(p)) + " " +
                    std::to_string(fs::last_write_time(p).time_since_epoch().count()));
  };
  add(fs::read_symlink("/proc/self/exe"));
  add(YOLO_TRAIN_PATH);
  for (const auto& e : fs::recursive_directory_iterator(YOLOTRAIN_BUILD_SRC_DIR)) {
    if (e.is_regular_file() && e.path().filename().string().find(".so") != std::string::npos) add(e.path());
  }
  std::sort(parts.begin(), parts.end());
  std::string stamp;
  for (const auto& p : parts) stamp += p + "\n";
  return stamp;
}

// The weights (weights_of()) of an uninterrupted run of train_args(extra): trained once for the whole
// suite, not once per test process. The first test to need them trains the run and keeps the
// weights in YOLOTRAIN_TEST_CACHE_DIR under the SHA-256 of build_stamp() and the run's arguments
// (the same program, libraries and arguments train the same bytes: that is what every test
// comparing with it asserts); a rebuild makes another key, and an older build's files are removed.
inline const std::string& baseline(const std::vector<std::string>& extra = {}) {
  static std::map<std::vector<std::string>, std::string> trained_for;
  static const std::string stamp = build_stamp();
  if (auto it = trained_for.find(extra); it != trained_for.end()) return it->second;
  std::string args;
  for (const auto& a : train_args("/", extra)) {
    if (a.rfind("data=", 0) != 0 && a.rfind("project=", 0) != 0) args += a + "\n";  // not the temporary folders
  }
  const std::string build = lifecycle::sha256_hex(stamp).substr(0, 16);
  const fs::path cache = YOLOTRAIN_TEST_CACHE_DIR;
  const fs::path kept = cache / ("baseline-" + build + "-" + lifecycle::sha256_hex(args) + ".weights");
  if (fs::exists(kept)) return trained_for[extra] = slurp(kept);
  // One test process trains it; another one needing it meanwhile (ctest -j) waits for that one's
  // file instead of training the same run beside it. The lock goes with its holder, even a killed one.
  fs::create_directories(cache);
  const int lock = ::open((kept.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(lock >= 0);
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  REQUIRE(::flock(lock, LOCK_EX) == 0);
  if (fs::exists(kept)) return trained_for[extra] = slurp(kept);
  TempDir dir;
  const Finished f = run_to_end(train_args(dir.path(), extra), dir / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  const std::string trained = weights_of(dir / "run");
  std::error_code ignored;
  for (const auto& e : fs::directory_iterator(cache)) {  // an older build's (not a .part being written)
    const std::string name = e.path().filename().string();
    const auto ext = e.path().extension();
    if ((ext == ".weights" || ext == ".safetensors" || ext == ".lock") && name.rfind("baseline-", 0) == 0 &&
        name.rfind("baseline-" + build + "-", 0) != 0) {
      fs::remove(e.path(), ignored);
    }
  }
  const fs::path part = kept.string() + "." + std::to_string(getpid()) + ".part";
  std::ofstream(part, std::ios::binary) << trained;
  fs::rename(part, kept, ignored);  // whole or not at all: another test may be reading or writing it too
  return trained_for[extra] = trained;
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
  CHECK(weights_of(dir) == weights_of(straight));
}

}  // namespace yolotrain::test
