// Trainer::Run's self-healing, Ultralytics 8.4's NaN recovery (engine/trainer.py:
// _handle_nan_recovery, and save_model's EMA resync) made exact: a NaN/Inf loss or gradient is
// caught before it reaches the weights, and the run goes back to its newest checkpoint (or to
// where this process started) and replays from there, as a resume would. Ultralytics checks once
// per epoch and reloads last.pt; yolotrain checks every step, so the replay loses at most the
// steps since the last checkpoint. An out-of-memory error in a fresh run's first epoch starts the
// run again with half the batch (Trainer::run), up to 3 times, as 8.4 does.
#include "trainer_run.hpp"

#include "fault_injection.hpp"

namespace yolotrain::engine {

namespace {

bool all_finite(const lc::NamedTensors& tensors, const std::string& prefix) {
  for (const auto& [name, t] : tensors) {
    if (name.rfind(prefix, 0) == 0 && t.is_floating_point() && !t.isfinite().all().item<bool>()) return false;
  }
  return true;
}

}  // namespace

// Once a second (the progress line's cadence; every step with per-step TensorBoard scalars) and at
// an epoch's last step: a steady-state step reads nothing on the host.
bool Trainer::Run::tally_due() const {
  return cfg.tensorboard || state.batch == nb || Clock::now() - clock.last_tally_read >= std::chrono::seconds(1);
}

void Trainer::Run::read_tally() {
  const StepTally::Reading r = tally.read();
  clock.last_tally_read = Clock::now();
  const std::int64_t loss = r.nonfinite_loss_step, grad = r.nonfinite_grad_step;
  if (loss >= 0 && (grad < 0 || loss <= grad)) {
    throw NonFiniteTraining("the loss was NaN/Inf at step " + std::to_string(loss) +
                            (loss == injected_nonfinite_step ? " (injected)" : ""));
  }
  if (grad >= 0) throw NonFiniteTraining("the gradient norm was NaN/Inf at step " + std::to_string(grad));
  state.loss_means = r.means;
  losses_step = step();
}

void Trainer::Run::keep_start() {
  if (ranks.active()) return;
  start_snapshot = snapshot(false);
}

void Trainer::Run::roll_back(const std::string& why) {
  if (ranks.active()) {
    throw Error(why + "; a run of several ranks is not rolled back (resume=true restarts it from its last checkpoint)");
  }
  if (++recovery_attempts > 3) {
    throw Error("training failed: " + why + ", and 3 roll-backs did not help; the data or the learning rate is the "
                "likely cause (try a lower lr0, or amp=false)");
  }
  store->wait();
  lc::LoadResult found = store->load_latest();
  std::optional<lc::Checkpoint> target = std::move(found.checkpoint);
  if (!target || (start_snapshot && start_snapshot->meta.step > target->meta.step)) target = start_snapshot;
  if (!target) throw Error(why + "; there is no checkpoint to roll back to");
  if (!all_finite(target->tensors, "model.") || !all_finite(target->tensors, "ema.")) {
    throw Error(why + "; the checkpoint of step " + std::to_string(target->meta.step) +
                " holds NaN/Inf weights itself, so there is nothing sound to roll back to");
  }
  say("warning: " + why + "; rolling back to step " + std::to_string(target->meta.step) + " (attempt " +
      std::to_string(recovery_attempts) + "/3)");
  optimizer->state().clear();
  for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
  plan.resume_from = std::move(target);
  state = stored_state();
  restore();
  plan.resume_from.reset();
  outputs.results = detail::ResultsCsv(ranks.leader() ? plan.run_dir : fs::path(), state.results_csv);
}

void Trainer::Run::out_of_memory(const std::exception& e) {
  const std::string what = e.what();
  const bool oom = what.find("out of memory") != std::string::npos ||
                   what.find("CUBLAS_STATUS_ALLOC_FAILED") != std::string::npos;
  // Ultralytics 8.4 retries only in the first epoch, on one device, at most 3 times; yolotrain
  // also only in a run that began in this process (a resumed one keeps its recorded batch) and
  // without a bucket (whose copy of the run would not start over with it).
  if (!oom || ranks.active() || !started_fresh || state.epoch != 0 || cfg.batch <= 1 || batch_retries >= 3 ||
      !cfg.remote.empty()) {
    throw;
  }
  const std::int64_t half = std::max<std::int64_t>(cfg.batch / 2, 1);
  throw BatchTooLarge((device.is_cuda() ? "CUDA" : "CPU") + std::string(" out of memory with batch=") +
                          std::to_string(cfg.batch) + ". Reducing to batch=" + std::to_string(half) +
                          " and retrying (" + std::to_string(batch_retries + 1) + "/3).",
                      half);
}

void Trainer::Run::repair_ema() {
  // Ultralytics 8.4's save_model: each EMA tensor poisoned by a transient NaN/Inf is copied from the
  // live model where that is finite.
  torch::NoGradGuard no_grad;
  auto model_sd = nn::state_dict(*model);
  auto ema_sd = nn::state_dict(*ema->ema());
  for (std::size_t i = 0; i < ema_sd.size() && i < model_sd.size(); ++i) {
    const at::Tensor& e = ema_sd[i].second;
    const at::Tensor& m = model_sd[i].second;
    if (!e.is_floating_point() || e.isfinite().all().item<bool>()) continue;
    if (m.isfinite().all().item<bool>()) {
      e.copy_(m);
      log_only("warning: EMA tensor " + ema_sd[i].first + " held NaN/Inf; copied from the model");
    }
  }
}

}  // namespace yolotrain::engine
