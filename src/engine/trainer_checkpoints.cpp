// Trainer::Run: the resumed position restored, snapshots (the tensors and the TrainState), saves.
#include "trainer_run.hpp"

namespace yolotrain::engine {

// A stop waits for the final checkpoint's upload at most remote_timeout seconds.
void Trainer::Run::finish_remote() {
  if (plan.remote) result.remote_uploaded = plan.remote->finish(cfg.remote_timeout, result.last_checkpoint);
}

// The checkpoint's tensors into the model, EMA, optimizer and generator; its state (read into
// `state` by build(), which took the optimizer's stored choice from it) into the run.
void Trainer::Run::restore() {
  const lc::Checkpoint& c = *plan.resume_from;
  torch::NoGradGuard no_grad;
  auto copy_into = [&](const lc::NamedTensors& dst, const std::string& prefix) {
    for (const auto& [name, t] : dst) t.copy_(c.tensor(prefix + name));
  };
  copy_into(nn::state_dict(*model), "model.");
  copy_into(nn::state_dict(*ema->ema()), "ema.");
  load_optimizer_state(*optimizer, choice.name, c.tensors, "optim.");
  for (auto& p : model->named_parameters()) {
    for (const auto& [name, t] : c.tensors) {
      if (name == "grad." + p.key()) p.value().mutable_grad() = shaped_like(p.value(), t);
    }
  }
  auto gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(c.tensor("rng.cpu"));
  }
  // The data position in global samples, so that any number of ranks continues it.
  if (state.samples >= 0) state.batch = data.train_loader->batch_for_global_samples(state.samples);
  if (state.loss_means.size() != task->loss_terms().size()) {
    throw ConfigError("checkpoint " + plan.run_dir.string() + ": it holds " + std::to_string(state.loss_means.size()) +
                      " running losses, this task's loss has " + std::to_string(task->loss_terms().size()) +
                      " terms; it was written for another task");
  }
  task->restore(state.task);
  ema->updates = state.ema_updates;
  scaler.restore(state.scaler_scale, state.scaler_growth_tracker);
  if (graphed) graphed->clear();  // a roll-back: the steps capture anew
  // The learning rates the last step trained with, as results.csv's lr/pg* report them at the
  // epoch's end (a run stopped after an epoch's last batch resumes straight into that end).
  if (state.batch > 0) schedule(step() - 1);
  saved_step = step();
  losses_step = step();
  say("resumed from step " + std::to_string(step()) + " (epoch " + std::to_string(state.epoch + 1) + ", batch " +
      std::to_string(state.batch) + ")");
}

TrainState Trainer::Run::stored_state() const {
  const lc::Checkpoint& c = *plan.resume_from;
  return TrainState::from_checkpoint(c.meta.extra, c.meta.epoch, c.tensor("state.tloss"),
                                     "at step " + std::to_string(c.meta.step) + " of " + plan.run_dir.string());
}

lc::Checkpoint Trainer::Run::snapshot(bool completed) {
  repair_ema();
  lc::NamedTensors live;
  for (const auto& [name, t] : nn::state_dict(*model)) live.emplace_back("model." + name, t);
  for (const auto& [name, t] : nn::state_dict(*ema->ema())) live.emplace_back("ema." + name, t);
  for (auto& e : optimizer_state(*optimizer, choice.name, "optim.")) live.push_back(std::move(e));
  if (step() - 1 != state.last_opt_step) {  // gradients accumulated since the last optimizer step
    for (const auto& p : model->named_parameters()) {
      if (p.value().grad().defined()) live.emplace_back("grad." + p.key(), p.value().grad());
    }
  }
  auto gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    live.emplace_back("rng.cpu", gen.get_state());
  }
  TrainState s = state;
  s.samples = data.train_loader->global_samples(state.batch);
  s.world_size = ranks.world_size();
  s.ema_updates = ema->updates;
  s.optimizer = choice.name;
  s.lr = choice.lr;
  s.momentum = choice.momentum;
  s.warmup_bias_lr = choice.warmup_bias_lr;
  const GradScaler::Reading scaler_now = scaler.read();
  s.scaler_scale = scaler_now.scale;
  s.scaler_growth_tracker = scaler_now.growth_tracker;
  s.elapsed_s = elapsed();
  s.results_csv = outputs.results.text();
  s.completed = completed;
  s.names = io::encode_names(model->names());
  const std::vector<std::int64_t> kpt = model->classifier() ? std::vector<std::int64_t>{}
                                                            : model->head()->options.kpt_shape();
  s.kpt_shape = kpt.empty() ? "" : std::to_string(kpt[0]) + "," + std::to_string(kpt[1]);
  s.task = task->state();
  live.emplace_back("state.tloss", s.loss_means_tensor());
  lc::Checkpoint c;
  c.meta.step = step();
  c.meta.epoch = state.epoch;
  c.meta.config = cfg.to_yaml();
  c.meta.extra = s.to_extra();
  c.tensors = lc::host_snapshot(live, store->take_spare());
  return c;
}

void Trainer::Run::checkpoint(bool wait, bool completed, bool force) {
  const auto t0 = Clock::now();
  if (cfg.save && ranks.leader() && (saved_step != step() || completed || force)) {
    read_tally();  // the running losses it saves; a NaN/Inf since the last read is not saved
    const auto snapshot_started = Clock::now();
    store->save_async(snapshot(completed));
    safe_exit.snapshot_took(seconds_since(snapshot_started));
    saved_step = step();
    clock.last_save = Clock::now();
  }
  if (wait) store->wait();
  report_saved();
  if (wait && preemption) {  // on disk: a notice's checkpoint is safe
    if (const auto saved = store->last_saved()) preemption->saved(saved->second.step, saved->second.wall_time);
  }
  result.timings.checkpoint_s += seconds_since(t0);
}

void Trainer::Run::report_saved() {
  const auto saved = store->last_saved();
  if (!saved || saved->first == result.last_checkpoint) return;
  result.last_checkpoint = saved->first;
  outputs.status->set_checkpoint(saved->first, saved->second.step, saved->second.wall_time);
  safe_exit.write_took(store->last_write_seconds());
  if (cb.on_checkpoint) cb.on_checkpoint(saved->first);
}

// The time to a safe exit, measured and published (status.json's exit_cost, /metrics); a cloud's
// notice acted on with it (preemption_run.hpp).
void Trainer::Run::watch_safe_exit() {
  safe_exit.polled();
  if (plan.remote) safe_exit.upload_took(plan.remote->mirror()->status().last_checkpoint_seconds);
  const double safe_exit_s = safe_exit.seconds();
  outputs.status->set_safe_exit(safe_exit_s);
  if (preemption) preemption->poll(safe_exit_s, eta_seconds(), *outputs.status);
}

double Trainer::Run::eta_seconds() const {
  const std::int64_t done = step() - start_step;
  if (done <= 0) return std::numeric_limits<double>::infinity();
  return seconds_since(clock.started) / static_cast<double>(done) * static_cast<double>(cfg.epochs * nb - step());
}

}  // namespace yolotrain::engine
