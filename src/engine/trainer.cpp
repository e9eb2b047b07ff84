// Trainer: a run's plan, the run built from it, and how any run ends (completed, stopped, paused
// or failed): the program's on_train_end, the plots and the bucket finished on every path.
#include "trainer_run.hpp"

#include <cstdio>

namespace yolotrain::engine {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double StepTimings::images_per_second() const {
  const double busy = data_s + forward_s + loss_s + backward_s + optimizer_s;
  return busy > 0 ? double(images) / busy : 0.0;
}

const char* to_string(RunOutcome outcome) noexcept {
  switch (outcome) {
    case RunOutcome::Completed: return "completed";
    case RunOutcome::Stopped: return "stopped";
    case RunOutcome::Paused: return "paused";
    case RunOutcome::Failed: return "failed";
  }
  return "unknown";
}

int RunResult::exit_code() const {
  if (peer_lost) return dist::kWatchdogExitCode;
  switch (outcome) {
    case RunOutcome::Completed: return 0;
    case RunOutcome::Stopped: return signal > 0 ? 128 + signal : 75;
    case RunOutcome::Paused: return 75;
    case RunOutcome::Failed: return 1;
  }
  return 1;
}

Trainer::Trainer(TrainConfig config, TrainerCallbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {}

Trainer::Trainer(TrainConfig config, TrainerCallbacks callbacks, TrainingData data)
    : config_(std::move(config)), callbacks_(std::move(callbacks)), data_(std::move(data)) {
  config_.data = kMemoryData;
}

Trainer::~Trainer() = default;

Trainer::Run::Run(RunPlan plan_, RankGroup ranks_, detail::RunLog& log_, const TrainerCallbacks& cb_,
                  lc::ControlToken& token_, const std::optional<TrainingData>& given_)
    : cfg(plan_.cfg), plan(std::move(plan_)), ranks(std::move(ranks_)), cb(cb_), token(token_), given(given_),
      log(log_) {}

void Trainer::Run::say(const std::string& line) { log.say(line); }

void Trainer::Run::log_only(const std::string& line) { log.log_only(line); }

void Trainer::Run::set_state(lc::RunState s) {
  if (cb.on_state_change) cb.on_state_change(s);  // status.json's state listens first
}

// As Ultralytics' dataset scan: one warning per bad file with its reason. All of them go to
// train.log, the first 20 to the terminal too.
void Trainer::Run::report_problems(const std::string& prefix, const data::ScanReport& report) {
  std::vector<std::string> lines;
  for (const auto& p : report.corrupt) {
    lines.push_back(prefix + "WARNING " + p.file.string() + ": ignoring corrupt image/label: " + p.reason);
  }
  for (const auto& w : report.warnings) lines.push_back(prefix + "WARNING " + w);
  const std::size_t shown = 20;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i < shown) say(lines[i]);
    else log_only(lines[i]);
  }
  if (lines.size() > shown) {
    say(prefix + "... and " + std::to_string(lines.size() - shown) + " more warnings, all in train.log");
  }
}

// What a failure returns: where the run was, and why.
RunResult Trainer::Run::failed(const std::exception& e) {
  RunResult r = result;
  r.epoch = state.epoch;
  r.step = step();
  r.outcome = RunOutcome::Failed;
  r.reason = e.what();
  return r;
}

namespace {

// Freed activations stay in the process for the next step instead of being page-faulted in again
// (15-30 % of a CPU step); they go back to the kernel when the run ends.
struct KeepFreedHostMemory {
  KeepFreedHostMemory() { lc::keep_freed_host_memory(); }
  ~KeepFreedHostMemory() { lc::release_freed_host_memory(); }
};

// A failure before the run existed (joining the ranks, the run folder, the checkpoint, the
// bucket): the program hears on_train_end; a usage error is thrown on, anything else is a result.
RunResult end_before_run(const std::exception& e, const TrainerCallbacks& cb) {
  RunResult r;
  r.outcome = RunOutcome::Failed;
  r.reason = e.what();
  r.peer_lost = dynamic_cast<const dist::CollectiveError*>(&e) != nullptr;
  if (cb.on_train_end) cb.on_train_end(r);
  if (dynamic_cast<const ConfigError*>(&e)) throw;
  return r;
}

}  // namespace

// Ends the run on a failure: status.json says why; after training started, a checkpoint first,
// unless a rank is gone (the step in flight is torn: gradients half averaged; the last checkpoint
// stands, and torchrun --max-restarts resumes from it). The plots and the bucket finish.
RunResult Trainer::Run::end_failed(const std::exception& e) {
  const bool peer_lost = dynamic_cast<const dist::CollectiveError*>(&e) != nullptr;
  if (outputs.status) outputs.status->set_error(e.what());
  if (store && outputs.status && !peer_lost && !dynamic_cast<const ConfigError*>(&e)) {
    try {
      checkpoint(true);
    } catch (const std::exception& save_error) {
      std::cerr << "yolotrain: could not checkpoint after the failure: " << save_error.what() << std::endl;
    }
  }
  set_state(lc::RunState::Failed);
  finish_plots();
  finish_remote();
  finish_control();
  RunResult r = failed(e);
  r.peer_lost = peer_lost;
  return r;
}

namespace {

// The run folder of a first attempt, made ready for the next one with a smaller batch: the same
// folder (exist_ok), a fresh start, and none of the attempt's checkpoints (a later resume must not
// find a step of the other batch size).
TrainConfig next_attempt(TrainConfig cfg, const fs::path& run_dir, std::int64_t batch) {
  std::error_code ec;
  fs::remove_all(run_dir / "weights", ec);
  cfg.project = run_dir.parent_path().string();
  cfg.name = run_dir.filename().string();
  cfg.exist_ok = true;
  cfg.resume = "false";
  cfg.batch = batch;
  return cfg;
}

}  // namespace

RunResult Trainer::run(lc::ControlToken& token) {
  lc::CudaGuard guard;
  KeepFreedHostMemory host_memory;
  detail::RunLog log;  // outlives the run: the bucket's messages go to it
  for (int retries = 0;; ++retries) {
    std::unique_ptr<Run> run;
    try {
      RankGroup ranks = RankGroup::from_environment(config_.dist_timeout);
      log.set_speaks(ranks.leader());  // rank 0 speaks for the group, as Ultralytics' LOGGER
      RunPlan plan = resolve_run(config_, ranks, [&log](const std::string& line) { log.say(line); });
      run = std::make_unique<Run>(std::move(plan), std::move(ranks), log, callbacks_, token, data_);
      run->batch_retries = retries;
    } catch (const std::exception& e) {
      return end_before_run(e, callbacks_);
    }
    try {
      return finish_run(*run);
    } catch (const BatchTooLarge& e) {  // Ultralytics 8.4: a first-epoch OOM retries with half the batch
      log.say(std::string("warning: ") + e.what());
      const fs::path dir = run->plan.run_dir;
      run.reset();  // the model, optimizer and loaders go, and their memory with them
      lc::cuda_release_cached();
      config_ = next_attempt(config_, dir, e.batch);
    }
  }
}

RunResult Trainer::finish_run(Run& run) {
  RunResult result;
  try {
    result = run.run();
  } catch (const BatchTooLarge&) {
    throw;  // Trainer::run starts it again
  } catch (const std::exception& e) {
    result = run.end_failed(e);
    // The run's own listeners too (TensorBoard adds the run's pictures), the program's after them.
    if (run.cb.on_train_end) run.cb.on_train_end(result);
    if (dynamic_cast<const ConfigError*>(&e)) throw;  // found while setting up: the input must change
    return result;
  }
  if (run.cb.on_train_end) run.cb.on_train_end(result);
  return result;
}

}  // namespace yolotrain::engine
