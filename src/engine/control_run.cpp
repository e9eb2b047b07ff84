#include "control_run.hpp"

#include <iostream>
#include <optional>

#include "yolotrain/endpoint/bearer_token.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::engine::detail {

ControlRun::ControlRun(const TrainConfig& cfg, const RankGroup& ranks, lifecycle::ControlToken& token)
    : cfg_(cfg), leader_(ranks.leader()) {
  if (cfg.control.empty() || !(ranks.leader() || cfg.control_per_rank)) return;
  endpoint::ControlServerOptions o;
  try {
    o.address = endpoint::parse_listen_address(cfg.control);
    if (cfg.control_per_rank && o.address.port != 0) o.address.port += ranks.local_rank();
    if (!cfg.control_token_file.empty()) o.token = endpoint::read_token_file(cfg.control_token_file);
    server_ = std::make_unique<endpoint::ControlServer>(token, o);
  } catch (const Error& e) {  // the listen and token errors name their argument; the address's do not
    const std::string why = e.what();
    throw ConfigError(why.rfind("control", 0) == 0 ? why : "control=" + cfg.control + ": " + why);
  }
  std::cout << "control: " << (ranks.active() ? "rank " + std::to_string(ranks.rank()) + " " : std::string())
            << "listening on " << server_->url() << (o.token.empty() ? "" : " (bearer token required)") << std::endl;
}

ControlRun::~ControlRun() { finish(); }

namespace {

// A step's share of the run, in percent, and the seconds left at this epoch's pace.
double percent_done(const TrainerProgress& p) {
  const double total = static_cast<double>(p.epochs * p.batches);
  return total > 0 ? 100.0 * static_cast<double>(p.step) / total : 0.0;
}
std::optional<double> seconds_left(const TrainerProgress& p) {
  if (p.timed_batches <= 0) return std::nullopt;
  const auto left = static_cast<double>(p.epochs * p.batches - p.step);
  return left * p.epoch_seconds / static_cast<double>(p.timed_batches);
}

}  // namespace

void ControlRun::attach(lifecycle::RunStatus& status, const std::string& run_name, TrainerCallbacks& cb) {
  if (server_) server_->attach(status);
  if (!leader_) return;
  report_progress(cb);
  if (cfg_.metrics_push.empty()) return;
  remote::MetricsPushOptions o;
  o.url = cfg_.metrics_push;
  o.job = cfg_.metrics_push_job;
  o.instance = run_name;
  o.interval = std::chrono::milliseconds(static_cast<std::int64_t>(cfg_.metrics_push_interval * 1000));
  pusher_ = std::make_unique<remote::MetricsPusher>(status, o);
  std::cout << "metrics_push: pushing to " << remote::pushgateway_group_url(o) << std::endl;
  cb.on_fit_epoch_end.add([p = pusher_.get()](const EpochMetrics&) { p->push_now(); });
  cb.on_state_change.add([p = pusher_.get()](lifecycle::RunState) { p->push_now(); });
}

// Kubeflow Trainer's progress, when the pod's environment names its endpoint (KEP-2779).
void ControlRun::report_progress(TrainerCallbacks& cb) {
  const auto options = remote::kubeflow_progress_from_environment();
  if (!options) return;
  progress_ = std::make_unique<remote::KubeflowProgress>(*options);
  std::cout << "kubeflow: reporting progress to " << options->url << std::endl;
  cb.on_batch_end.add(
      [p = progress_.get()](const TrainerProgress& t) { p->set_progress(percent_done(t), seconds_left(t)); });
  cb.on_fit_epoch_end.add([p = progress_.get()](const EpochMetrics& m) { p->set_metrics(m.named()); });
}

void ControlRun::finish() {
  if (finished_) return;
  finished_ = true;
  if (pusher_) pusher_->finish(std::chrono::seconds(5));
  if (progress_) progress_->finish(std::chrono::seconds(5));
  if (server_) server_->close();
}

}  // namespace yolotrain::engine::detail
