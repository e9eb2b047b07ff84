// yolo_train on several processes (c10d Gloo on 127.0.0.1): launched by scripts/torchrun, or
// directly with the launcher's environment so that each rank's exit code can be checked.
#include <ATen/ATen.h>

#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"

#include "yolotrain/lifecycle/files/folder_lock.hpp"

#include "catch.hpp"
#include <nlohmann/json.hpp>
#include <signal.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "http_client.hpp"
#include "s3_server.hpp"
#include "results_csv.hpp"
#include "test_support.hpp"
#include "tiny_shapes.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> rank_args(const fs::path& project, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {YOLO_TRAIN_PATH,
                                "data=" + yt::tiny_shapes_dataset().string(),
                                "epochs=2",
                                "imgsz=64",
                                "batch=4",
                                "workers=1",
                                "project=" + project.string(),
                                "name=run",
                                "save_interval=0",
                                "verbose=false",
                                "dist_timeout=20",
                                "status_interval=0.01",
                                "plots=false"};  // pictures only where a test looks at them (rank 0's)
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// yolo_train on two ranks under scripts/torchrun (`launcher` adds torchrun options).
std::vector<std::string> torchrun_cmd(const fs::path& project, const std::vector<std::string>& extra = {},
                                      const std::vector<std::string>& launcher = {}) {
  std::vector<std::string> cmd = {YOLOTRAIN_TORCHRUN, "--nproc_per_node=2"};
  cmd.insert(cmd.end(), launcher.begin(), launcher.end());
  for (const char* a : {"--monitor_interval=0.2", "--no_python"}) cmd.push_back(a);
  cmd.push_back("--master_port=" + std::to_string(yt::free_port()));
  for (const auto& a : rank_args(project, extra)) cmd.push_back(a);
  return cmd;
}

// Starts the ranks of one run directly, with the environment torchrun would give them.
std::vector<yt::Child> start_ranks(const fs::path& project, const std::vector<std::string>& extra, int world = 2) {
  const std::string port = std::to_string(yt::free_port());
  std::vector<yt::Child> ranks;
  for (int r = 0; r < world; ++r) {
    yt::ScopedEnv env({{"RANK", std::to_string(r)},
                       {"LOCAL_RANK", std::to_string(r)},
                       {"WORLD_SIZE", std::to_string(world)},
                       {"LOCAL_WORLD_SIZE", std::to_string(world)},
                       {"MASTER_ADDR", "127.0.0.1"},
                       {"MASTER_PORT", port},
                       {"TORCHELASTIC_USE_AGENT_STORE", std::nullopt},
                       {"TORCHELASTIC_RESTART_COUNT", std::nullopt}});
    ranks.push_back(yt::spawn(rank_args(project, extra), project / ("rank" + std::to_string(r) + ".txt")));
  }
  return ranks;
}

std::vector<int> wait_all(std::vector<yt::Child>& ranks, std::chrono::seconds timeout) {
  std::vector<int> codes;
  for (auto& r : ranks) codes.push_back(yt::wait_exit(r, timeout).value_or(-1));
  return codes;
}

std::string outputs(const fs::path& project) {
  return yt::slurp(project / "rank0.txt") + "\n----- rank 1 -----\n" + yt::slurp(project / "rank1.txt");
}

}  // namespace

TEST_CASE("two ranks launched by scripts/torchrun train to the end with one set of run files", "[integration]") {
  if (const auto missing = yt::torchrun_missing()) {
    WARN(*missing);
    return;
  }
  yt::TempDir tmp;
  yt::Child child = yt::spawn(torchrun_cmd(tmp.path(), {"plots=true"}), tmp / "out.txt");
  const pid_t group = child.pid;
  const int code = yt::wait_exit(child, 300s).value_or(-1);
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("DDP: 2 ranks, batch 2 per rank"));
  const std::string csv = yt::slurp(tmp / "run" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  CHECK(nlohmann::json::parse(yt::slurp(tmp / "run" / "status.json"))["state"] == "completed");
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(tmp / "run")) {
    const auto ext = e.path().extension();
    entries += e.path().filename() != "weights" && ext != ".jpg" && ext != ".png" &&
               e.path().filename() != "confusion_matrix.csv";
  }
  CHECK(entries == 5);  // .lock (rank 0's), args.yaml, results.csv, status.json, train.log: rank 1 wrote nothing
  CHECK(fs::exists(tmp / "run" / "train_batch0.jpg"));  // rank 0's pictures
  // results.csv is rank 0's alone: its training losses are those rank 0 printed in its epoch
  // lines (each rank trains on its own half of a batch; another rank's row would differ).
  const std::regex line("epoch ([0-9]+)/2: .*\\(losses ([0-9.]+) ([0-9.]+) ([0-9.]+)\\)");
  std::map<int, std::vector<double>> printed;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
    printed[std::stoi((*it)[1])] = {std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])};
  }
  REQUIRE(printed.size() == 2);
  const yt::Csv table = yt::read_results(tmp / "run" / "results.csv");
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const int epoch = static_cast<int>(table.at(r, "epoch"));
    REQUIRE(printed.count(epoch));
    int i = 0;
    for (const char* term : {"train/box_loss", "train/cls_loss", "train/dfl_loss"}) {
      CAPTURE(epoch, term);
      CHECK(std::abs(table.at(r, term) - printed[epoch][i++]) <= 0.0006);
    }
  }
  CHECK(!yolotrain::lifecycle::FolderLock::holder(tmp / "run"));  // released with its owner
  CHECK(yt::wait_until([&] { return !yt::process_group_alive(group); }, 10s));
}

TEST_CASE("SIGTERM to torchrun stops every rank at one step with one checkpoint and no process left", "[integration]") {
  if (const auto missing = yt::torchrun_missing()) {
    WARN(*missing);
    return;
  }
  yt::TempDir tmp;
  yt::Child child = yt::spawn(torchrun_cmd(tmp.path(), {"epochs=20"}), tmp / "out.txt");
  const pid_t group = child.pid;
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  kill(child.pid, SIGTERM);
  yt::wait_exit(child, 120s);
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  const auto status = yt::status_of(tmp / "run");
  CHECK(status["state"] == "stopped");
  CHECK(status["last_checkpoint"]["step"] == status["step"]);
  CHECK(out.find("stopped (SIGTERM)") != std::string::npos);  // rank 0 speaks for both
  CHECK(yt::wait_until([&] { return !yt::process_group_alive(group); }, 10s));
  const yt::Finished resumed = yt::run_to_end(rank_args(tmp.path(), {"epochs=3", "resume=true"}), tmp / "r.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
}

TEST_CASE("SIGTERM to one rank stops both at the same step and the run resumes on 1 or 2 ranks", "[integration]") {
  yt::TempDir tmp;
  auto ranks = start_ranks(tmp.path(), {});
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  kill(ranks[1].pid, SIGTERM);
  const auto codes = wait_all(ranks, 60s);
  INFO(outputs(tmp.path()));
  CHECK(codes == std::vector<int>{143, 143});
  const auto status = nlohmann::json::parse(yt::slurp(tmp / "run" / "status.json"));
  CHECK(status["state"] == "stopped");
  const std::int64_t stopped_at = status["step"];
  CHECK(status["last_checkpoint"]["step"] == stopped_at);
  // A copy of the stopped run resumes on 2 ranks; the original on 1.
  yt::TempDir copy;
  REQUIRE(std::system(("cp -a " + (tmp / "run").string() + " " + copy.path().string() + "/").c_str()) == 0);
  auto again = start_ranks(copy.path(), {"resume=true"});
  const auto codes2 = wait_all(again, 300s);
  INFO(outputs(copy.path()));
  CHECK(codes2 == std::vector<int>{0, 0});
  CHECK_THAT(yt::slurp(copy / "rank0.txt"), Catch::Contains("resumed from step " + std::to_string(stopped_at)));
  const yt::Finished one = yt::run_to_end(rank_args(tmp.path(), {"resume=true"}), tmp / "one.txt");
  INFO(one.output);
  CHECK(one.code == 0);
  CHECK_THAT(one.output, Catch::Contains("resumed from step " + std::to_string(stopped_at)));
  const std::string csv = yt::slurp(tmp / "run" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
}

TEST_CASE("two ranks with remote=: rank 0 uploads, and with the folder gone both ranks resume from the bucket",
          "[integration][s3]") {
  if (const auto why = yt::S3Server::unavailable()) {
    WARN("S3 test skipped: " << *why);
    return;
  }
  yt::S3Server server("runs");
  yt::ScopedEnv env({{"AWS_ACCESS_KEY_ID", yt::S3Server::access_key()},
                     {"AWS_SECRET_ACCESS_KEY", yt::S3Server::secret_key()},
                     {"AWS_ENDPOINT_URL", server.endpoint()},
                     {"AWS_REGION", std::string("us-east-1")}});
  yt::TempDir tmp;
  auto ranks = start_ranks(tmp.path(), {"remote=s3://runs/ddp"});
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  kill(ranks[1].pid, SIGTERM);
  CHECK(wait_all(ranks, 60s) == std::vector<int>{143, 143});
  INFO(outputs(tmp.path()));
  const std::int64_t stopped_at = yt::status_of(tmp / "run")["step"];
  CHECK_THAT(yt::slurp(tmp / "rank0.txt"), Catch::Contains("remote: every upload confirmed"));
  CHECK_THAT(yt::slurp(tmp / "rank1.txt"), !Catch::Contains("remote:"));  // rank 0 alone talks to the bucket
  yt::remove_tree(tmp / "run");
  auto again = start_ranks(tmp.path(), {"remote=s3://runs/ddp", "resume=true"});
  CHECK(wait_all(again, 300s) == std::vector<int>{0, 0});
  INFO(outputs(tmp.path()));
  CHECK_THAT(yt::slurp(tmp / "rank0.txt"), Catch::Contains("resume: downloaded s3://runs/ddp/weights/") &&
                                               Catch::Contains("resumed from step " + std::to_string(stopped_at)));
  const std::string csv = yt::slurp(tmp / "run" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);  // the whole run's epochs, from the checkpoint
}

TEST_CASE("a pause sent to one rank pauses both and a resume sent to the other resumes both", "[integration]") {
  yt::TempDir tmp;
  auto ranks = start_ranks(tmp.path(), {});
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  kill(ranks[1].pid, SIGUSR1);
  REQUIRE(yt::wait_until([&] { return yt::status_of(tmp / "run")["state"] == "paused"; }, 60s));
  const double cpu0 = yt::cpu_seconds(ranks[0].pid), cpu1 = yt::cpu_seconds(ranks[1].pid);
  std::this_thread::sleep_for(1s);
  CHECK(yt::cpu_seconds(ranks[0].pid) - cpu0 < 0.2);  // agreeing every 200 ms, no spinning
  CHECK(yt::cpu_seconds(ranks[1].pid) - cpu1 < 0.2);
  kill(ranks[0].pid, SIGUSR2);
  const auto codes = wait_all(ranks, 300s);
  INFO(outputs(tmp.path()));
  CHECK(codes == std::vector<int>{0, 0});
}

TEST_CASE("over HTTP: a pause sent to rank 1 pauses both ranks at one step, a resume sent to rank 0 resumes both",
          "[integration][control]") {
  yt::TempDir tmp;
  int port = 0;  // rank 0 listens on it, rank 1 on the next: both must be free
  for (int tries = 0; tries < 50 && port == 0; ++tries) {
    const int p = yt::free_port();
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(p + 1));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) port = p;
    ::close(fd);
  }
  REQUIRE(port > 0);
  auto ranks = start_ranks(tmp.path(), {"control=127.0.0.1:" + std::to_string(port), "control_per_rank=true"});
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  auto r = yt::http_request(port + 1, "POST", "/v1/pause?wait=120");
  INFO(r.body << outputs(tmp.path()));
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "paused");
  CHECK(yt::wait_until([&] { return yt::status_of(tmp / "run")["state"] == "paused"; }, 60s));  // rank 0's
  CHECK(yt::status_of(tmp / "run")["step"] == r.json()["step"]);  // one step for both
  r = yt::http_request(port, "GET", "/v1/status");
  CHECK(r.json()["state"] == "paused");
  r = yt::http_request(port, "POST", "/v1/resume?wait=120");
  CHECK(r.status == 200);
  const auto codes = wait_all(ranks, 300s);
  CHECK(codes == std::vector<int>{0, 0});
  CHECK_THAT(yt::slurp(tmp / "rank1.txt"), Catch::Contains("control: rank 1 listening on http://127.0.0.1:" +
                                                            std::to_string(port + 1)));
}

TEST_CASE("a killed rank makes the other exit 69 naming it instead of hanging", "[integration]") {
  yt::TempDir tmp;
  auto ranks = start_ranks(tmp.path(), {"epochs=50"});
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  kill(ranks[1].pid, SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  const int code = yt::wait_exit(ranks[0], 60s).value_or(-1);
  yt::wait_exit(ranks[1], 10s);
  INFO(outputs(tmp.path()));
  CHECK(code == 69);
  CHECK(std::chrono::steady_clock::now() - t0 < 25s);  // dist_timeout=20 at most
  CHECK_THAT(yt::slurp(tmp / "rank0.txt"), Catch::Contains("rank(s) 1"));
  CHECK(yt::status_of(tmp / "run")["state"] == "failed");
}

TEST_CASE("two ranks of batch b step like one process of batch 2b", "[integration]") {
  yt::TempDir tmp;
  const std::vector<std::string> extra = {"epochs=1", "mosaic=0", "fliplr=0", "hsv_h=0", "hsv_s=0", "hsv_v=0",
                                          "translate=0", "scale=0", "val=false", "batch=8"};
  auto ranks = start_ranks(tmp / "two", extra);
  const auto codes = wait_all(ranks, 300s);
  INFO(outputs(tmp / "two"));
  REQUIRE(codes == std::vector<int>{0, 0});
  const yt::Finished one = yt::run_to_end(rank_args(tmp / "one", extra), tmp / "one.txt");
  REQUIRE(one.code == 0);
  // BatchNorm normalises over each rank's half batch (as Ultralytics' DDP), so the weights agree
  // closely, not bit for bit; the optimizer, loss scaling and averaging are what this checks.
  const auto a =
      yolotrain::lifecycle::CheckpointStore::load(tmp / "two" / "run" / "weights" / "last-000000000002.ytckpt");
  const auto b =
      yolotrain::lifecycle::CheckpointStore::load(tmp / "one" / "run" / "weights" / "last-000000000002.ytckpt");
  double diff = 0, norm = 0;
  for (const auto& [name, t] : a.tensors) {
    if (name.rfind("model.", 0) != 0 || name.find("running") != std::string::npos || !t.is_floating_point()) continue;
    diff += (t - b.tensor(name)).pow(2).sum().item<double>();
    norm += b.tensor(name).pow(2).sum().item<double>();
  }
  const double relative = std::sqrt(diff / norm);
  INFO("relative L2 difference of the weights: " << relative);
  CHECK(relative < 1e-3);
}

// A segmentation run on two ranks: each rank's masks with its share of the batch, the figures
// exchanged by name (the (M) metrics and the seg losses among them), results.csv rank 0's.
TEST_CASE("a segmentation model trains on two ranks to the end with the seg columns", "[integration][segment]") {
  yt::TempDir tmp;
  auto ranks = start_ranks(tmp.path(), {"model=yolov8n-seg.yaml", "data=" + yt::tiny_shapes_seg_dataset().string()});
  const auto codes = wait_all(ranks, 300s);
  INFO(outputs(tmp.path()));
  REQUIRE(codes == std::vector<int>{0, 0});
  const std::string csv = yt::slurp(tmp / "run" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  CHECK_THAT(csv, Catch::Contains("train/seg_loss") && Catch::Contains("metrics/mAP50(M)"));
  const auto status = nlohmann::json::parse(yt::slurp(tmp / "run" / "status.json"));
  CHECK(status["state"] == "completed");
  CHECK(status["metrics"].contains("val/seg_loss"));
}

TEST_CASE("with torchrun --max-restarts a SIGKILLed rank is restarted and the run resumes to the end",
          "[integration]") {
  if (const auto missing = yt::torchrun_missing()) {
    WARN(*missing);
    return;
  }
  yt::TempDir tmp;
  const auto cmd = torchrun_cmd(tmp.path(), {"epochs=3", "resume=true", "save_interval=0.1"}, {"--max_restarts=1"});
  yt::Child child = yt::spawn(cmd, tmp / "out.txt");
  REQUIRE(yt::wait_for_step(tmp / "run", 3));
  const int rank0 = yt::status_of(tmp / "run")["pid"];
  kill(rank0, SIGKILL);
  const int code = yt::wait_exit(child, 300s).value_or(-1);
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("resumed from step"));
  CHECK(yt::status_of(tmp / "run")["state"] == "completed");
  const std::string csv = yt::slurp(tmp / "run" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
}
