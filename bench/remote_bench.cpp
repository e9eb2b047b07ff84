// What remote= costs: training step time with and without it (the same run, time-based
// checkpoints uploading while it trains), upload and download throughput to a local S3 API server
// (s3rver, started here as the tests start it), and the stop latency (request -> run() returns,
// the final checkpoint written and, with remote=, confirmed in the bucket).
// Run: build/bench/remote_bench [data=shapes] [imgsz=160] [batch=16] [steps=40] [rounds=2] [save_interval=2]
// Prints figures only; it asserts nothing.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <sys/resource.h>

#include "s3_server.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/remote/remote_mirror.hpp"

namespace en = yolotrain::engine;
namespace lc = yolotrain::lifecycle;
namespace yt = yolotrain::test;
using Clock = std::chrono::steady_clock;

namespace {

std::string arg_or(const std::vector<std::string>& args, const std::string& key, const std::string& fallback) {
  for (const auto& a : args) {
    if (a.rfind(key + "=", 0) == 0) return a.substr(key.size() + 1);
  }
  return fallback;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Round {
  double median_step = 0, mean_step = 0, stop_latency = 0;  // steps after the first 3 (warm-up)
};

// One training run of `steps` steps, then a stop request mid-step.
Round train(const std::vector<std::string>& args, const std::string& project, const std::string& remote, long steps) {
  std::vector<std::string> cfg_args = {"epochs=100", "val=false", "plots=false", "exist_ok=true", "verbose=false",
                                       "project=" + project};
  for (const auto& a : args) {
    if (a.rfind("steps=", 0) != 0 && a.rfind("rounds=", 0) != 0) cfg_args.push_back(a);
  }
  if (!remote.empty()) cfg_args.push_back("remote=" + remote);
  const en::TrainConfig cfg = en::TrainConfig::from_args(cfg_args);
  lc::ControlToken token;
  std::vector<double> step_times;
  Clock::time_point last = Clock::now(), stop_asked{};
  en::TrainerCallbacks cb;
  cb.on_train_start = [&](const en::TrainerProgress&) { last = Clock::now(); };
  cb.on_batch_end = [&](const en::TrainerProgress&) {
    step_times.push_back(seconds_since(last));
    last = Clock::now();
    if (static_cast<long>(step_times.size()) == steps) {
      std::thread([&, half = step_times.back() / 2] {
        std::this_thread::sleep_for(std::chrono::duration<double>(half));
        stop_asked = Clock::now();
        token.request_stop();
      }).detach();
    }
  };
  en::Trainer trainer(cfg, cb);
  trainer.run(token);
  Round r;
  r.stop_latency = seconds_since(stop_asked);
  std::vector<double> tail(step_times.begin() + std::min<std::size_t>(3, step_times.size()), step_times.end());
  for (double t : tail) r.mean_step += t / double(tail.size());
  std::sort(tail.begin(), tail.end());
  if (!tail.empty()) r.median_step = tail[tail.size() / 2];
  return r;
}

// part_size: S3Settings::multipart_part_size (a 60 MB file: one PUT with 1 GiB, 4 parts with 16 MiB).
void throughput(const yt::S3Server& server, const std::string& parent, std::size_t part_size, int n) {
  const std::string dir = parent + "/tp" + std::to_string(n);
  lc::CheckpointStore store({dir + "/weights", 2, "", "last", {}});
  lc::Checkpoint c;
  c.tensors.emplace_back("w", at::rand({15 * 1000 * 1000}));  // 60 MB, a YOLOv8n training checkpoint's size
  yolotrain::remote::S3Settings s;
  s.endpoint = server.endpoint();
  s.path_style = true;
  s.access_key_id = yt::S3Server::access_key();
  s.secret_access_key = yt::S3Server::secret_key();
  s.multipart_part_size = part_size;
  yolotrain::remote::RemoteMirror mirror(
      yolotrain::remote::S3Client(s, server.bucket()),
      yolotrain::remote::S3Location::parse("s3://" + server.bucket() + "/tp" + std::to_string(n)), dir);
  double mb = 0;
  const auto t0 = Clock::now();
  for (int i = 1; i <= 5; ++i) {
    c.meta.step = i;
    const auto path = store.save(c);
    mb = double(std::filesystem::file_size(path)) / 1e6;
    mirror.upload_checkpoint(path, i);
    mirror.finish(600);
  }
  const double up = seconds_since(t0);
  const auto t1 = Clock::now();
  const auto fetched =
      yolotrain::remote::fetch_latest_checkpoint(mirror.client(), mirror.location(), dir + "/down", "weights/last");
  const double down = seconds_since(t1);
  const std::string how =
      mb * 1e6 > double(part_size) ? std::to_string(part_size >> 20) + " MiB parts" : "one PUT each";
  std::printf("upload: 5 checkpoints of %.1f MB (saved, verified, %s, keep_last in the bucket) in %.2f s: %.0f MB/s; "
              "download + verify of the newest: %.2f s: %.0f MB/s%s\n",
              mb, how.c_str(), up, 5 * mb / up, down, mb / down, fetched.path ? "" : " (FAILED)");
}

}  // namespace

int main(int argc, char** argv) {
  en::prefer_avx512_kernels();  // as yolo_train does
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const char* d : {"data=shapes", "imgsz=160", "batch=16", "save_interval=2", "workers=2"}) {
    const std::string key = std::string(d).substr(0, std::string(d).find('='));
    if (arg_or(args, key, "").empty()) args.push_back(d);
  }
  const long steps = std::stol(arg_or(args, "steps", "40"));
  const int rounds = std::stoi(arg_or(args, "rounds", "2"));
  if (const auto why = yt::S3Server::unavailable()) {
    std::printf("remote_bench: %s\n", why->c_str());
    return 1;
  }
  yt::S3Server server("bench");
  // The server stands for another machine: niced, so that its work shares the cores with
  // training as little as the scheduler allows (on a 2-core machine it still costs something).
  setpriority(PRIO_PROCESS, static_cast<id_t>(server.pid()), 19);
  setenv("AWS_ACCESS_KEY_ID", yt::S3Server::access_key().c_str(), 1);
  setenv("AWS_SECRET_ACCESS_KEY", yt::S3Server::secret_key().c_str(), 1);
  setenv("AWS_ENDPOINT_URL", server.endpoint().c_str(), 1);
  setenv("AWS_REGION", "us-east-1", 1);
  char dir[] = "/tmp/yolotrain-remote-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  int n = 0;
  const std::size_t one_put = std::size_t{1} << 30, parts = std::size_t{16} << 20;  // 60 MB: 1 request or 4 parts
  for (std::size_t part_size : {one_put, parts, one_put, parts}) {
    throughput(server, dir, part_size, ++n);  // one PUT and parts, alternating
  }
  std::printf("training %ld steps per round (%s %s %s, save_interval %s s: checkpoints uploading while it trains), "
              "alternating:\n",
              steps, arg_or(args, "data", "").c_str(), arg_or(args, "imgsz", "").c_str(),
              arg_or(args, "batch", "").c_str(), arg_or(args, "save_interval", "").c_str());
  std::vector<Round> plain, remote;
  for (int r = 0; r < rounds; ++r) {
    for (const bool second : {false, true}) {  // odd rounds start with remote=: order effects cancel
      const bool with_remote = second != (r % 2 == 1);
      const std::string name = std::string(dir) + "/" + (with_remote ? "remote" : "local") + std::to_string(r);
      const Round got = train(args, name, with_remote ? "s3://bench/run" + std::to_string(r) : "", steps);
      (with_remote ? remote : plain).push_back(got);
      std::printf("  round %d %-10s step: median %.4f s, mean %.4f s; stop -> return %.2f s\n", r + 1,
                  with_remote ? "remote=" : "local only", got.median_step, got.mean_step, got.stop_latency);
      std::fflush(stdout);
    }
  }
  auto mean_of = [&](const std::vector<Round>& v, double Round::*field) {
    double sum = 0;
    for (const auto& x : v) sum += x.*field;
    return sum / double(v.size());
  };
  for (auto [label, field] : {std::pair{"median", &Round::median_step}, std::pair{"mean", &Round::mean_step}}) {
    const double a = mean_of(plain, field), b = mean_of(remote, field);
    std::printf("%s step, over the rounds: local only %.4f s, remote= %.4f s: %+.1f%%\n", label, a, b,
                100.0 * (b / a - 1));
  }
  std::printf("stop -> return, over the rounds: local only %.2f s, remote= %.2f s (the final upload confirmed)\n",
              mean_of(plain, &Round::stop_latency), mean_of(remote, &Round::stop_latency));
  std::system((std::string("rm -rf ") + dir).c_str());
  return 0;
}
