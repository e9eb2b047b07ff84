#include "control_run.hpp"

#include <iostream>

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

void ControlRun::attach(lifecycle::RunStatus& status, const std::string& run_name, TrainerCallbacks& cb) {
  if (server_) server_->attach(status);
  if (cfg_.metrics_push.empty() || !leader_) return;
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

void ControlRun::finish() {
  if (finished_) return;
  finished_ = true;
  if (pusher_) pusher_->finish(std::chrono::seconds(5));
  if (server_) server_->close();
}

}  // namespace yolotrain::engine::detail
