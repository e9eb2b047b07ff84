#pragma once
// A run that hears its cloud's notice itself (preemption=auto|aws|gcp|azure): the metadata server
// polled on a thread of its own (yolotrain::cloud::NoticeWatcher; one process per machine, LOCAL_RANK
// 0, polls), and on the training thread, at each poll of the loop, what a notice means: a checkpoint
// at once, training on while it is safe, then a stop with a checkpoint (exit 75) when the deadline
// minus the measured time to a safe exit (and a margin) is reached — or none when the run finishes
// first. The requests go through the ControlToken, so under torchrun every rank checkpoints and
// stops at the same step. The notice, its deadline and the planned stop: the log, status.json, /metrics.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rank_group.hpp"
#include "yolotrain/cloud/notice_watcher.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::engine::detail {

/// The seconds kept between the planned stop and the deadline beyond the measured time to a safe
/// exit: 2 s plus a quarter of it (a step slower than the recent ones, a slower disk).
double preemption_margin(double safe_exit_s);

class PreemptionRun {
 public:
  using Say = std::function<void(const std::string&)>;
  /// Starts polling when `cfg.preemption` asks this process to (see above); says which cloud and
  /// server, or why not (preemption=auto outside a known cloud: nothing is sent). Throws
  /// ConfigError for a cloud whose metadata is switched off (AWS_EC2_METADATA_DISABLED).
  PreemptionRun(const TrainConfig& cfg, const RankGroup& ranks, lifecycle::ControlToken& token, Say say);
  ~PreemptionRun();

  /// Whether a notice is being watched for.
  bool watching() const { return watcher_ != nullptr; }
  /// At each poll of the loop (training thread): a new notice is said and recorded and asks for a
  /// checkpoint; the stop is asked for once its time has come. `eta_s`: the run's remaining
  /// training time (infinity when unknown).
  void poll(double safe_exit_s, double eta_s, lifecycle::RunStatus& status);
  /// The newest checkpoint on disk holds `step`, written at `wall_time` (Unix seconds): after a
  /// notice, says how long after it.
  void saved(std::int64_t step, double wall_time);
  /// The stop's reason for the log: "preemption (aws spot/instance-action terminate at ...)".
  std::string stop_reason() const;
  /// The run has ended and its checkpoint is safe (written, uploaded): acknowledges the notice where
  /// the cloud takes one (Azure: the machine may go now) and stops polling.
  void finish(bool stopped);

 private:
  void announce(const cloud::Notice& n, double safe_exit_s, double eta_s, lifecycle::RunStatus& status);
  void replan(double safe_exit_s, double eta_s, lifecycle::RunStatus& status);
  void ask_checkpoint();
  void record(lifecycle::RunStatus& status) const;  // the notice and the plan into status.json

  lifecycle::ControlToken& token_;
  Say say_;
  std::unique_ptr<cloud::NoticeWatcher> watcher_;
  std::optional<cloud::Notice> notice_;  // the one announced
  double planned_stop_ = 0;              // Unix seconds; 0: none planned
  bool stop_requested_ = false, awaiting_checkpoint_ = false, checkpoint_asked_ = false;
};

}  // namespace yolotrain::engine::detail
