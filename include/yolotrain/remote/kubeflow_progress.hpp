#pragma once
// yolotrain::remote::KubeflowProgress — a run's progress, remaining time and figures sent to
// Kubeflow Trainer's TrainJob status endpoint (KEP-2779, Trainer v2.2, feature gate TrainJobStatus),
// where `kubectl get trainjob` and the dashboards show them. The controller injects three variables
// into the trainer pods: KUBEFLOW_TRAINER_SERVER_URL (https://.../namespaces/NS/trainjobs/NAME/status),
// KUBEFLOW_TRAINER_SERVER_TOKEN (the file of a projected service-account token, which rotates: read
// again for every request) and KUBEFLOW_TRAINER_SERVER_CA_CERT (the CA's file). Each update is
// `POST <url>` with `Authorization: Bearer <token>` and
// {"trainerStatus": {"progressPercentage": 42, "estimatedRemainingSeconds": 120,
//  "metrics": [{"name": "metrics/mAP50(B)", "value": "0.512"}], "lastUpdatedTime": "2026-...Z"}}
// (kubeflow/trainer pkg/statusserver; names and values are strings of 1-64 characters, at most 256
// metrics), at most one per 5 s as the user guide asks. A failure is said once and never stops the run.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace yolotrain::remote {

struct KubeflowProgressOptions {
  std::string url;         ///< KUBEFLOW_TRAINER_SERVER_URL
  std::string token_file;  ///< KUBEFLOW_TRAINER_SERVER_TOKEN ("": no Authorization header)
  std::string ca_file;     ///< KUBEFLOW_TRAINER_SERVER_CA_CERT ("": the system's CAs)
  std::chrono::milliseconds interval{30000};  ///< between updates (update(now=true) adds some)
  std::chrono::milliseconds min_gap{5000};    ///< never two updates closer than this
  std::chrono::milliseconds timeout{5000};    ///< one request
};

/// The options the pod's environment names, or nothing when KUBEFLOW_TRAINER_SERVER_URL is unset.
std::optional<KubeflowProgressOptions> kubeflow_progress_from_environment();

/// What one update says.
struct KubeflowUpdate {
  double progress = 0;                    ///< percent, 0-100
  std::optional<double> remaining_s;      ///< estimated seconds left
  std::vector<std::pair<std::string, double>> metrics;  ///< by name (a YOLO run: results.csv's)
};

/// The request body of `update` at `time` (what is POSTed).
std::string kubeflow_progress_payload(const KubeflowUpdate& update, std::chrono::system_clock::time_point time);

class KubeflowProgress {
 public:
  explicit KubeflowProgress(KubeflowProgressOptions options);
  /// finish(options.timeout) if not done.
  ~KubeflowProgress();
  KubeflowProgress(const KubeflowProgress&) = delete;
  KubeflowProgress& operator=(const KubeflowProgress&) = delete;

  /// The run's position now (sent on the cadence); `now`: send it as soon as the gap allows.
  void set_progress(double percent, std::optional<double> remaining_s, bool now = false);
  /// The run's figures (an epoch's end): replaces the previous ones and sends them soon.
  void set_metrics(std::vector<std::pair<std::string, double>> metrics);
  /// Stops the thread and sends the last update, retrying until `wait` has passed.
  bool finish(std::chrono::milliseconds wait);
  std::uint64_t sent() const;
  std::string last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolotrain::remote
