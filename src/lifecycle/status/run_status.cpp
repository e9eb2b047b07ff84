#include "yolotrain/lifecycle/status/run_status.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "prometheus_text.hpp"

namespace yolotrain::lifecycle {
namespace {

constexpr std::size_t kMaxRequests = 50;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

const char* to_string(RunState state) noexcept {
  switch (state) {
    case RunState::Starting: return "starting";
    case RunState::Running: return "running";
    case RunState::Pausing: return "pausing";
    case RunState::Paused: return "paused";
    case RunState::Stopping: return "stopping";
    case RunState::Stopped: return "stopped";
    case RunState::Completed: return "completed";
    case RunState::Failed: return "failed";
  }
  return "unknown";
}

std::int64_t resident_bytes() noexcept {
  std::ifstream in("/proc/self/statm");
  long long pages_total = 0, pages_resident = 0;
  if (!(in >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

RunStatus::RunStatus(std::filesystem::path file, std::chrono::milliseconds interval)
    : file_(std::move(file)), interval_(interval), started_(unix_now()), progressed_(started_) {
  if (!file_.empty()) run_label_ = std::filesystem::absolute(file_).parent_path().string();
}

void RunStatus::set_state(RunState state) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = state;
  write_locked();
}

RunState RunStatus::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

void RunStatus::set_progress(std::int64_t step, std::int64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (step != step_) progressed_ = unix_now();
  step_ = step;
  epoch_ = epoch;
  if (std::chrono::steady_clock::now() - last_write_ >= interval_) write_locked();
}

void RunStatus::set_throughput(double value, const std::string& unit) {
  std::lock_guard<std::mutex> lock(mutex_);
  throughput_ = {value, unit};
}

void RunStatus::set_metric(const std::string& name, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  metrics_[name] = value;
}

void RunStatus::set_checkpoint(const std::filesystem::path& path, std::int64_t step, double wall_time) {
  std::lock_guard<std::mutex> lock(mutex_);
  checkpoint_path_ = path.string();
  checkpoint_step_ = step;
  checkpoint_time_ = wall_time;
  ++checkpoints_;
  write_locked();
}

void RunStatus::note_request(const std::string& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  requests_.emplace_back(unix_now(), request);
  if (requests_.size() > kMaxRequests) requests_.erase(requests_.begin());
  write_locked();
}

void RunStatus::set_error(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  error_ = message;
  write_locked();
}

void RunStatus::set_remote(const RemoteUploadStatus& remote) {
  std::lock_guard<std::mutex> lock(mutex_);
  remote_ = remote;
  write_locked();
}

void RunStatus::set_notice(const NoticeStatus& notice) {
  std::lock_guard<std::mutex> lock(mutex_);
  notice_ = notice;
  write_locked();
}

void RunStatus::set_safe_exit(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  safe_exit_s_ = seconds;
}

void RunStatus::set_textfile(const std::filesystem::path& path, const std::string& run) {
  std::lock_guard<std::mutex> lock(mutex_);
  textfile_ = path;
  if (!run.empty()) run_label_ = run;
}

void RunStatus::set_run_label(const std::string& run) {
  std::lock_guard<std::mutex> lock(mutex_);
  run_label_ = run;
}

std::string RunStatus::json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return json_locked();
}

std::string RunStatus::prometheus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return prometheus_text(nlohmann::ordered_json::parse(json_locked()), run_label_);
}

std::int64_t RunStatus::step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return step_;
}

std::uint64_t RunStatus::checkpoints() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return checkpoints_;
}

void RunStatus::write() {
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked();
}

void RunStatus::maybe_write() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::chrono::steady_clock::now() - last_write_ >= interval_) write_locked();
}

std::optional<std::string> RunStatus::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return write_error_;
}

std::string RunStatus::json_locked() const {
  nlohmann::ordered_json j;
  j["state"] = to_string(state_);
  j["pid"] = static_cast<long>(getpid());
  j["step"] = step_;
  j["epoch"] = epoch_;
  j["started"] = started_;
  j["updated"] = unix_now();
  j["progressed"] = progressed_;
  if (checkpoint_path_) {
    j["last_checkpoint"] = {{"path", *checkpoint_path_}, {"step", checkpoint_step_}, {"time", checkpoint_time_}};
  } else {
    j["last_checkpoint"] = nullptr;
  }
  j["requests"] = nlohmann::ordered_json::array();
  for (const auto& [time, what] : requests_) j["requests"].push_back({{"time", time}, {"request", what}});
  if (throughput_) j["throughput"] = {{"value", throughput_->first}, {"unit", throughput_->second}};
  j["memory"] = {{"rss_bytes", resident_bytes()}};
  const CudaMemory cuda = cuda_memory();
  if (cuda.cuda) {
    j["memory"]["cuda"] = {{"device", cuda.device}, {"allocated", cuda.allocated}, {"reserved", cuda.reserved}};
    if (cuda.process_bytes) j["memory"]["cuda"]["process_bytes"] = *cuda.process_bytes;
  }
  j["metrics"] = metrics_;
  j["error"] = error_ ? nlohmann::ordered_json(*error_) : nlohmann::ordered_json(nullptr);
  if (remote_) {
    const auto& r = *remote_;
    j["remote"] = {
        {"url", r.url},
        {"last_uploaded_step",
         r.last_uploaded_step >= 0 ? nlohmann::ordered_json(r.last_uploaded_step) : nlohmann::ordered_json(nullptr)},
        {"last_uploaded", r.last_uploaded},
        {"last_uploaded_time", r.last_uploaded_time},
        {"pending", r.pending},
        {"retries", r.retries},
        {"last_error", r.last_error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.last_error)},
        {"bytes", r.bytes},
        {"seconds", r.seconds},
        {"last_checkpoint_seconds", r.last_checkpoint_seconds}};
  }
  // What a kill now would cost: the work since the newest checkpoint (since the start without one).
  const double now = j["updated"].get<double>();
  j["exit_cost"] = {
      {"safe_exit_seconds", safe_exit_s_ ? nlohmann::ordered_json(*safe_exit_s_) : nlohmann::ordered_json(nullptr)},
      {"checkpoint_age_seconds", std::max(0.0, now - (checkpoint_path_ ? checkpoint_time_ : started_))},
      {"steps_at_risk", std::max<std::int64_t>(0, step_ - (checkpoint_path_ ? checkpoint_step_ : 0))}};
  if (notice_) {
    const auto& n = *notice_;
    const auto planned = n.planned_stop > 0 ? nlohmann::ordered_json(n.planned_stop) : nlohmann::ordered_json(nullptr);
    j["notice"] = {{"source", n.source},     {"event", n.event},       {"kind", n.kind},
                   {"seen", n.seen},         {"deadline", n.deadline}, {"planned_stop", planned}};
  } else {
    j["notice"] = nullptr;
  }
  return j.dump(2) + "\n";
}

void RunStatus::write_locked() {
  if (file_.empty()) return;  // a status that only keeps figures (the non-leading ranks)
  const std::string text = json_locked();
  try {
    atomic_write(file_, text);
    if (!textfile_.empty()) atomic_write(textfile_, prometheus_text(nlohmann::ordered_json::parse(text), run_label_));
    write_error_.reset();
  } catch (const std::exception& e) {
    if (!write_error_ || *write_error_ != e.what()) std::cerr << "yolotrain: status: " << e.what() << "\n";
    write_error_ = e.what();
  }
  last_write_ = std::chrono::steady_clock::now();  // the interval runs from the end of a write
}

}  // namespace yolotrain::lifecycle
