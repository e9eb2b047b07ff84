#pragma once
// A run's control endpoint (control=), metrics push (metrics_push=) and Kubeflow Trainer progress
// (when the pod's environment names its endpoint), beside the trainer: the endpoint opened first
// thing (a port in use ends the run before any work, exit 2), given the run's status once it
// exists; the push fed at each epoch end and change of state, the progress at each step (sent every
// 30 s, at least 5 s apart) and its figures at each epoch end; all closed at the end (a last push
// and progress update; waiting requests answered).
#include <functional>
#include <memory>
#include <string>

#include "rank_group.hpp"
#include "yolotrain/endpoint/control_server.hpp"
#include "yolotrain/remote/kubeflow_progress.hpp"
#include "yolotrain/remote/metrics_push.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/engine/trainer.hpp"

namespace yolotrain::engine::detail {

class ControlRun {
 public:
  /// Listens when `cfg.control` asks this rank to: rank 0, or with control_per_rank every rank, on
  /// PORT + LOCAL_RANK (port 0: any free one each). Says where on stdout (every rank that listens).
  /// Throws ConfigError when the address cannot be listened on.
  ControlRun(const TrainConfig& cfg, const RankGroup& ranks, lifecycle::ControlToken& token);
  ~ControlRun();

  /// The run's status exists: the endpoint reports it; rank 0 starts pushing (`run_name`: the
  /// group's instance label) at each epoch end and change of state, and reporting its progress to
  /// Kubeflow Trainer, added to `cb`.
  void attach(lifecycle::RunStatus& status, const std::string& run_name, TrainerCallbacks& cb);
  /// The run has ended (its final state set): the last push (at most a few seconds when the gateway
  /// is down), then the waiting requests answered and the endpoint closed.
  void finish();

 private:
  void report_progress(TrainerCallbacks& cb);

  const TrainConfig& cfg_;
  bool leader_;
  bool finished_ = false;
  std::unique_ptr<endpoint::ControlServer> server_;
  std::unique_ptr<remote::MetricsPusher> pusher_;
  std::unique_ptr<remote::KubeflowProgress> progress_;
};

}  // namespace yolotrain::engine::detail
