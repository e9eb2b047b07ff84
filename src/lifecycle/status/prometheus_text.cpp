#include "prometheus_text.hpp"

#include <cstdio>

#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::lifecycle {
namespace {

// Label values escape backslash, quote and newline; metric names keep [a-zA-Z0-9_].
std::string label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

struct Writer {
  std::string labels;
  std::string text;
  void gauge(const std::string& name, const std::string& help, double value, const std::string& extra = "") {
    if (text.find("# TYPE " + name + " ") == std::string::npos) {
      text += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n";
    }
    char num[64];
    std::snprintf(num, sizeof(num), "%.17g", value);
    text += name + "{" + labels + extra + "} " + num + "\n";
  }
};

}  // namespace

std::string prometheus_text(const nlohmann::ordered_json& j, const std::string& run) {
  Writer w;
  w.labels = "run=\"" + label_value(run) + "\"";
  const std::string state = j.value("state", "");
  for (RunState s : {RunState::Starting, RunState::Running, RunState::Pausing, RunState::Paused,
                     RunState::Stopping, RunState::Stopped, RunState::Completed, RunState::Failed}) {
    w.gauge("yolotrain_state", "1 for the run's current state", state == to_string(s) ? 1 : 0,
            std::string(",state=\"") + to_string(s) + "\"");
  }
  w.gauge("yolotrain_epoch", "epoch being trained (0-based)", j.value("epoch", 0.0));
  w.gauge("yolotrain_step", "batches trained in all", j.value("step", 0.0));
  w.gauge("yolotrain_last_progress_timestamp_seconds", "Unix time the step last advanced",
          j.value("progressed", j.value("started", 0.0)));
  w.gauge("yolotrain_updated_timestamp_seconds", "Unix time of this write", j.value("updated", 0.0));
  if (j.contains("last_checkpoint") && j["last_checkpoint"].is_object()) {
    w.gauge("yolotrain_last_checkpoint_timestamp_seconds", "Unix time of the newest checkpoint",
            j["last_checkpoint"].value("time", 0.0));
    w.gauge("yolotrain_last_checkpoint_step", "step of the newest checkpoint", j["last_checkpoint"].value("step", 0.0));
  }
  if (j.contains("throughput") && j["throughput"].value("unit", "") == "images/s") {
    w.gauge("yolotrain_images_per_second", "training images per second", j["throughput"].value("value", 0.0));
  }
  if (j.contains("metrics")) {  // one family, the figure's own name as a label: no name mangled
    for (const auto& [name, value] : j["metrics"].items()) {
      if (value.is_number()) {
        w.gauge("yolotrain_metric", "a figure of the run by its name (a YOLO run: results.csv's column names)",
                value.get<double>(), ",name=\"" + label_value(name) + "\"");
      }
    }
  }
  const auto& mem = j.value("memory", nlohmann::ordered_json::object());
  w.gauge("yolotrain_resident_memory_bytes", "resident host memory of the process", mem.value("rss_bytes", 0.0));
  if (mem.contains("cuda")) {
    const std::string dev = ",device=\"" + std::to_string(mem["cuda"].value("device", 0)) + "\"";
    w.gauge("yolotrain_gpu_memory_allocated_bytes", "CUDA memory allocated by tensors",
            mem["cuda"].value("allocated", 0.0), dev);
    w.gauge("yolotrain_gpu_memory_reserved_bytes", "CUDA memory held by the caching allocator",
            mem["cuda"].value("reserved", 0.0), dev);
    if (mem["cuda"].contains("process_bytes")) {
      w.gauge("yolotrain_gpu_memory_process_bytes", "GPU memory the driver counts for the process (NVML)",
              mem["cuda"].value("process_bytes", 0.0), dev);
    }
  }
  if (j.contains("remote") && j["remote"].is_object()) {
    const auto& r = j["remote"];
    const double step = r["last_uploaded_step"].is_number() ? r["last_uploaded_step"].get<double>() : -1.0;
    w.gauge("yolotrain_remote_last_uploaded_step", "step of the newest checkpoint confirmed in the bucket (-1: none)",
            step);
    w.gauge("yolotrain_remote_pending_uploads", "uploads to the bucket waiting or in flight", r.value("pending", 0.0));
    w.gauge("yolotrain_remote_retries", "transient upload failures retried so far", r.value("retries", 0.0));
    w.gauge("yolotrain_remote_error", "1 when the last upload attempt failed", !r["last_error"].is_null());
  }
  if (j.contains("exit_cost") && j["exit_cost"].is_object()) {
    const auto& c = j["exit_cost"];
    if (c["safe_exit_seconds"].is_number()) {
      w.gauge("yolotrain_safe_exit_seconds", "measured time from a stop request to a safe exit (checkpoint written)",
              c["safe_exit_seconds"].get<double>());
    }
    w.gauge("yolotrain_checkpoint_age_seconds",
            "seconds of training a kill now would lose (since the newest checkpoint)",
            c.value("checkpoint_age_seconds", 0.0));
    w.gauge("yolotrain_steps_at_risk", "steps a kill now would lose (done since the newest checkpoint)",
            c.value("steps_at_risk", 0.0));
  }
  if (j.contains("notice") && j["notice"].is_object()) {
    const auto& n = j["notice"];
    const std::string labels = ",source=\"" + label_value(n.value("source", "")) + "\",kind=\"" +
                               label_value(n.value("kind", "")) + "\"";
    w.gauge("yolotrain_notice_deadline_timestamp_seconds", "Unix time the machine is taken back (a cloud's notice)",
            n.value("deadline", 0.0), labels);
    if (n["planned_stop"].is_number()) {
      w.gauge("yolotrain_notice_planned_stop_timestamp_seconds",
              "Unix time the run stops with a checkpoint before the notice's deadline",
              n["planned_stop"].get<double>());
    }
  }
  w.gauge("yolotrain_failed", "1 when the run failed with an error", j.contains("error") && !j["error"].is_null());
  return w.text;
}

}  // namespace yolotrain::lifecycle
