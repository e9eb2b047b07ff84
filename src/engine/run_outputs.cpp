#include "run_outputs.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "progress_line.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"

namespace yolotrain::engine::detail {
namespace {

// Ultralytics' progress line after each step: rewritten in place on a terminal; in logs (no tty)
// at most one line per 5 s, and the epoch's last.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(RunLog* log) : log_(log) {}
  void operator()(const TrainerProgress& p) const {
    const bool epoch_end = p.batch == p.batches;
    const auto now = std::chrono::steady_clock::now();
    if (!log_->tty() && !epoch_end && now - *last_ < std::chrono::seconds(5)) return;
    *last_ = now;
    const lifecycle::CudaMemory mem = lifecycle::cuda_memory();
    ProgressFigures f;
    f.epoch = p.epoch;
    f.epochs = p.epochs;
    f.gpu_mem_gb = mem.cuda ? double(mem.reserved) / 1e9 : 0.0;
    for (const auto& [term, value] : p.losses) f.losses.push_back(value);
    f.instances = p.instances;
    f.size = p.size;
    f.batch = p.batch;
    f.batches = p.batches;
    f.elapsed_s = p.epoch_seconds;
    f.timed_batches = p.timed_batches;
    log_->progress(progress_line(f), epoch_end);
  }

 private:
  RunLog* log_;
  std::shared_ptr<std::chrono::steady_clock::time_point> last_ =
      std::make_shared<std::chrono::steady_clock::time_point>();
};

// "epoch 3/20: P 0.512 R 0.430 mAP50 0.470 mAP50-95 0.301 (losses 1.21 2.03 1.15)", the mask or pose
// figures after the box ones when the task has them; a classification's "top1 0.953 top5 1.000".
std::string epoch_line(const EpochMetrics& m, std::int64_t epochs) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "epoch %lld/%lld:", static_cast<long long>(m.epoch), static_cast<long long>(epochs));
  std::string line = buf, losses;
  for (const auto& [kind, title] : {std::pair{"B", ""}, {"M", " mask"}, {"P", " pose"}}) {
    const std::string s = std::string("(") + kind + ")";
    const auto p = m.get("metrics/precision" + s), r = m.get("metrics/recall" + s), map50 = m.get("metrics/mAP50" + s),
               map = m.get("metrics/mAP50-95" + s);
    if (!p || !r || !map50 || !map) continue;
    std::snprintf(buf, sizeof(buf), "%s P %.3f R %.3f mAP50 %.3f mAP50-95 %.3f", title, *p, *r, *map50, *map);
    line += buf;
  }
  if (const auto top1 = m.get("metrics/accuracy_top1"), top5 = m.get("metrics/accuracy_top5"); top1 && top5) {
    std::snprintf(buf, sizeof(buf), " top1 %.3f top5 %.3f", *top1, *top5);
    line += buf;
  }
  for (const auto& [name, value] : m.named()) {
    if (name.rfind("train/", 0) != 0) continue;
    std::snprintf(buf, sizeof(buf), "%s%.3f", losses.empty() ? "" : " ", value);
    losses += buf;
  }
  return line + " (losses " + losses + ")";
}

}  // namespace

RunOutputs open_run_outputs(bool leader, const std::filesystem::path& run_dir, const TrainConfig& cfg,
                            std::int64_t step, std::int64_t epochs_done, std::string results_text) {
  RunOutputs out;
  const auto interval = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.status_interval * 1000));
  if (!leader) {
    out.results = ResultsCsv({}, std::move(results_text));
    out.status = std::make_unique<lifecycle::RunStatus>(std::filesystem::path(), interval);
    return out;
  }
  lifecycle::atomic_write(run_dir / "args.yaml", cfg.to_yaml());
  out.results = ResultsCsv(run_dir, std::move(results_text));
  out.status = std::make_unique<lifecycle::RunStatus>(run_dir / "status.json", interval);
  if (!cfg.metrics_file.empty()) out.status->set_textfile(cfg.metrics_file);
  if (cfg.plots) out.plots = std::make_unique<plots::PlotWriter>();
  if (cfg.tensorboard) out.tensorboard = std::make_unique<TensorBoardLogger>(run_dir, step, epochs_done);
  return out;
}

TrainerCallbacks with_run_outputs(RunOutputs& to, RunLog& log, const TrainConfig& cfg,
                                  const TrainerCallbacks& program) {
  CallbackList<const TrainerProgress&> epoch_start, batch_end;
  if (cfg.verbose) {
    epoch_start.add([log = &log](const TrainerProgress& p) {
      std::vector<std::string> terms;
      for (const auto& [term, value] : p.losses) terms.push_back(term);
      log->say(progress_header(terms));
    });
    batch_end.add(ProgressPrinter(&log));
  }
  batch_end.add([status = to.status.get()](const TrainerProgress& p) {
    for (const auto& [name, value] : p.named()) status->set_metric(name, value);
    if (p.epoch_seconds > 0) status->set_throughput(double(p.timed_images) / p.epoch_seconds, "images/s");
    status->set_progress(p.step, p.epoch);
  });
  CallbackList<const EpochMetrics&> fit_epoch_end;
  fit_epoch_end.add([&to](const EpochMetrics& m) { to.results.add(m, to.plots.get()); });
  fit_epoch_end.add([log = &log, epochs = cfg.epochs](const EpochMetrics& m) { log->say(epoch_line(m, epochs)); });
  fit_epoch_end.add([status = to.status.get()](const EpochMetrics& m) {
    for (const auto& [name, value] : m.named()) status->set_metric(name, value);
    status->set_metric("fitness", m.fitness);
  });
  CallbackList<lifecycle::RunState> state_change(
      [status = to.status.get()](lifecycle::RunState s) { status->set_state(s); });

  TrainerCallbacks cb = program;  // every event the program listens to, with ours ahead where we listen
  cb.on_train_epoch_start = epoch_start.append(program.on_train_epoch_start);
  cb.on_batch_end = batch_end.append(program.on_batch_end);
  cb.on_fit_epoch_end = fit_epoch_end.append(program.on_fit_epoch_end);
  cb.on_state_change = state_change.append(program.on_state_change);
  if (to.tensorboard) to.tensorboard->listen(cb);
  return cb;
}

}  // namespace yolotrain::engine::detail
