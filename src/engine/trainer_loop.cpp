// Trainer::Run: the training loop (start, epochs of steps, finish), a step, an epoch's end,
// validation, pause and stop.
#include "trainer_run.hpp"

#include "fault_injection.hpp"
#include "multi_scale.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace yolotrain::engine {
namespace {

// The head's outputs in float32, whatever autocast computed them in.
void to_float(nn::HeadOutputs& h) {
  for (auto* branch : {&h.one2many, &h.one2one}) {
    for (auto& f : *branch) {
      if (f.scalar_type() != torch::kFloat) f = f.to(torch::kFloat);
    }
  }
  for (at::Tensor* t : {&h.mask_coefficients, &h.one2one_mask_coefficients, &h.proto, &h.semantic}) {
    if (t->defined() && t->scalar_type() != torch::kFloat) *t = t->to(torch::kFloat);
  }
}

}  // namespace

std::int64_t Trainer::Run::schedule(std::int64_t ni) {
  const StepSchedule s = schedule_at(cfg, choice, ni, nb);
  for (std::size_t g = 0; g < s.lr.size(); ++g) set_group(*optimizer, g, s.lr[g], s.momentum);
  return s.accumulate;
}

// Clipping, the update, the EMA: multi-tensor operators, nothing read on the host. A step with an
// inf/NaN gradient (the fp16 scaler's found_inf, else a non-finite norm) is skipped on the device
// where the optimizer can (step_unless_nonfinite); a NaN/Inf gradient norm is noted in the tally
// and the next read rolls the run back (Trainer::Run::read_tally).
void Trainer::Run::optimizer_step() {
  const auto params = model->parameters();
  std::vector<at::Tensor> grads = defined_grads(params);
  const at::Tensor found_inf = scaler.unscale(grads);
  const at::Tensor norm = clip_grad_norm(grads, 10.0);
  // With fp16 scaling an inf gradient is the scaler's business: it skips the step.
  if (norm.defined() && amp != AmpMode::Fp16Scaled) tally.add_grad_norm(norm, step());
  step_unless_nonfinite(*optimizer, found_inf, norm);
  scaler.update(found_inf);
  drop_grads(params);
  ema->update(model);
}

lc::PauseEnd Trainer::Run::pause() {
  if (graphed) graphed->clear();  // their memory is released with the rest; the resumed steps capture anew
  lc::PauseSteps steps;
  steps.checkpoint = [&] { checkpoint(true); };
  steps.offload = [&](bool to_host) {
    const torch::Device to = to_host ? torch::Device(torch::kCPU) : device;
    model->to(to);
    ema->ema()->to(to);
    rehome_optimizer_state(*optimizer, choice.name);
  };
  steps.wait = [&] { return ranks.wait_while_paused(token).stop; };  // the ranks agree on the end
  steps.say = [&](const std::string& line) { say(line); };
  steps.set_state = [&](lc::RunState s) { set_state(s); };
  if (cb.on_pause) cb.on_pause(progress());
  const lc::PauseEnd end =
      lc::pause_run(token, *outputs.status, lc::parse_pause_release(cfg.pause_release), step(), steps);
  if (end == lc::PauseEnd::Resumed && cb.on_resume) cb.on_resume(progress());
  if (end == lc::PauseEnd::Exit) {
    result.outcome = RunOutcome::Paused;
    result.reason = "pause_release=exit";
  }
  return end;
}

bool Trainer::Run::poll() {
  if (clock.deadline && std::chrono::system_clock::now() >= *clock.deadline)
    token.request_stop(lc::StopReason::Deadline);
  watch_safe_exit();
  const double since_save = std::chrono::duration<double>(Clock::now() - clock.last_save).count();
  const bool save_due = cfg.save_interval > 0 && since_save >= cfg.save_interval;
  if (save_due && ranks.active() && ranks.leader()) token.request_checkpoint();  // agreed below, like SIGHUP
  // Decisions come from the agreement (every rank alike), not from the token directly.
  const dist::AgreedRequests agreed = ranks.agree(token);
  // A stop or pause saves outside the loop's roll-back (finish(), pause_run): the steps' figures are
  // read here first, so that a NaN/Inf among them rolls back instead (checkpoint() reads for itself).
  if (agreed.stop || agreed.pause) read_tally();
  if (agreed.checkpoint) {
    outputs.status->note_request("checkpoint");
    checkpoint(true);
    say("checkpoint at step " + std::to_string(step()));
  }
  bool stop = agreed.stop;
  if (agreed.pause && !stop) {
    const lc::PauseEnd end = pause();
    if (end == lc::PauseEnd::Exit) return false;
    stop = end == lc::PauseEnd::Stopped;  // a stop while paused: no further step
  }
  if (stop) {
    result.outcome = RunOutcome::Stopped;
    result.reason = token.stop_reason() == lc::StopReason::Preemption && preemption ? preemption->stop_reason()
                                                                                    : token.stop_description();
    result.signal = token.stop_signal();
    outputs.status->note_request(result.reason + ": stop");
    return false;
  }
  if (save_due && !ranks.active()) checkpoint(false);
  return true;
}

double Trainer::Run::elapsed() const {
  return state.elapsed_s + std::chrono::duration<double>(Clock::now() - clock.started).count();
}

// Every rank learns rank 0's validation (and training time), so all decide the epoch's end alike.
bool Trainer::Run::share_epoch_end(EpochMetrics& m, bool validated) {
  if (!ranks.active()) return validated;
  // The validation's figures by name (metrics/*, val/*, fitness); the training ones are each rank's.
  std::vector<std::string> names{"fitness"};
  std::vector<double> numbers{validated ? 1.0 : 0.0, elapsed(), m.fitness};
  for (const auto& [name, value] : m.named()) {
    if (name.rfind("metrics/", 0) == 0 || name.rfind("val/", 0) == 0) {
      names.push_back(name);
      numbers.push_back(value);
    }
  }
  const std::vector<double> v = ranks.broadcast_numbers(numbers);
  for (size_t i = 0; i < names.size(); ++i) m.set(names[i], v[i + 2]);
  clock.leader_elapsed = v[1];
  return v[0] != 0.0;
}

// Ultralytics' multi_scale (multi_scale.hpp): the batch resized to this step's size, each side
// stretched to a multiple of the stride.
at::Tensor Trainer::Run::multi_scale(const at::Tensor& img, std::int64_t ni) const {
  const std::int64_t gs = model->max_stride();
  const std::int64_t sz = multi_scale_size(cfg, gs, ni);
  const double sf = double(sz) / double(std::max(img.size(2), img.size(3)));
  if (sf == 1.0) return img;
  std::vector<std::int64_t> ns;
  for (int d : {2, 3}) ns.push_back(static_cast<std::int64_t>(std::ceil(double(img.size(d)) * sf / gs)) * gs);
  namespace F = torch::nn::functional;
  return F::interpolate(img, F::InterpolateFuncOptions().size(ns).mode(torch::kBilinear).align_corners(false));
}

nn::HeadOutputs Trainer::Run::forward(const at::Tensor& img) {
  nn::HeadOutputs heads;
  {
    AutocastScope autocast(amp, device);
    heads = model->forward_heads(img);
  }
  to_float(heads);  // the loss runs in float32
  return heads;
}

// With several ranks, Ultralytics scales the loss by the world size before DDP averages the
// gradients, so a step equals one process's step on the whole global batch.
at::Tensor Trainer::Run::to_backward(const at::Tensor& total) {
  return scaler.scale(ranks.active() ? total * double(ranks.world_size()) : total);
}

at::Tensor Trainer::Run::eager_step(const at::Tensor& img, const data::Batch& b, std::int64_t ni) {
  auto t0 = Clock::now();
  const nn::HeadOutputs heads = forward(img);
  result.timings.forward_s += seconds_since(t0);
  t0 = Clock::now();
  loss::LossOutput out = task->loss(heads, b, device);
  result.timings.loss_s += seconds_since(t0);
  if (testing::nonfinite_loss_due(ni)) {  // as a NaN loss would: the terms, the gradients
    out.total = out.total * std::numeric_limits<double>::quiet_NaN();
    out.items = out.items * std::numeric_limits<double>::quiet_NaN();
    injected_nonfinite_step = ni;
  }
  tally.add_loss(out.items, state.batch, ni);  // the running means, a NaN/Inf noted: read later
  t0 = Clock::now();
  to_backward(out.total).backward();
  result.timings.backward_s += seconds_since(t0);
  return out.items;
}

// Forward, loss and backward in one replay (timed as the forward). A capture that failed says so
// once, and the run goes on eagerly.
at::Tensor Trainer::Run::graphed_step(const at::Tensor& img, const data::Batch& b, std::int64_t ni) {
  const auto t0 = Clock::now();
  at::Tensor items = graphed->run(img, b, [&](const at::Tensor& x, const data::Batch& batch) -> GraphedStep::Output {
    const loss::LossOutput out = task->loss(forward(x), batch, device);
    return {to_backward(out.total), out.items};
  });
  result.timings.forward_s += seconds_since(t0);
  if (!graphed->disabled().empty()) {
    say("cuda_graph: " + graphed->disabled() + "; the steps run eagerly");
    graphed.reset();
  }
  if (testing::nonfinite_loss_due(ni)) {  // the test seam, on the items only: the graph made the gradients
    items = items * std::numeric_limits<double>::quiet_NaN();
    injected_nonfinite_step = ni;
  }
  tally.add_loss(items, state.batch, ni);
  return items;
}

void Trainer::Run::train_batch(const data::Batch& b) {
  const std::int64_t ni = step();
  if (testing::out_of_memory_due(ni)) {
    throw std::runtime_error("CUDA out of memory. Tried to allocate 20.00 MiB (injected at step " + std::to_string(ni) +
                             ")");
  }
  if (outputs.plots && state.epoch == 0 && b.index < 3) {
    task->plot_training_batch(*outputs.plots, b, ema->ema()->names(), plan.run_dir);
  }
  const std::int64_t accumulate = schedule(ni);
  auto t0 = Clock::now();
  at::Tensor img = data::preprocess_images(b.img, device);
  if (cfg.multi_scale > 0) img = multi_scale(img, ni);
  img = img.contiguous(memory_format);
  result.timings.forward_s += seconds_since(t0);  // the images' upload and scaling count as the forward
  if (graphed) {
    graphed_step(img, b, ni);
  } else {
    eager_step(img, b, ni);
  }
  if (ranks.active()) {
    t0 = Clock::now();
    ranks.average_gradients(model->parameters());
    result.timings.optimizer_s += seconds_since(t0);
  }
  if (ni - state.last_opt_step >= accumulate) {
    t0 = Clock::now();
    optimizer_step();
    result.timings.optimizer_s += seconds_since(t0);
    state.last_opt_step = ni;
  }
  ++state.batch;
  ++result.timings.steps;
  result.timings.images += b.img.size(0);
  ++clock.epoch_batches;
  clock.epoch_images += b.img.size(0);
  clock.last_instances = b.cls.size(0);
  clock.last_size = img.size(3);
}

std::optional<ValidationReport> Trainer::Run::validation_pass(bool plots) {
  const auto t0 = Clock::now();
  ValidationPass pass{ema->ema(), data.val_loader.get(), nullptr, device, memory_format, cfg.iou, cfg.max_det,
                      cfg.single_cls, &token, plots ? outputs.plots.get() : nullptr, plan.run_dir};
  pass.rules = rules_for(cfg.compat);
  std::optional<ValidationReport> report = task->validate(pass);
  result.timings.validation_s += seconds_since(t0);
  return report;
}

bool Trainer::Run::validate(EpochMetrics& m) {
  const std::optional<ValidationReport> report = validation_pass();
  if (!report) return false;  // stopped inside validation
  task->fill_validation(m, *report);
  m.epoch = state.epoch + 1;  // as results.csv numbers it (end_epoch fills the rest)
  if (cb.on_val_end) cb.on_val_end(m);
  return true;
}

// Waits for the queued pictures and says which could not be written (never failing the run).
void Trainer::Run::finish_plots() {
  if (!outputs.plots) return;
  outputs.plots->wait();
  for (const auto& w : outputs.plots->take_warnings()) say("WARNING plot " + w);
}

// As Ultralytics' final_eval: validate best (read back from its file) and print the table.
void Trainer::Run::final_eval() {
  store->wait();
  const fs::path best = plan.run_dir / "weights" / "best.ytckpt";
  if (!cfg.save || !fs::exists(best)) return;
  const lc::Checkpoint c = lc::CheckpointStore::load(best);
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, t] : nn::state_dict(*ema->ema())) t.copy_(c.tensor("ema." + name));
  }
  say("validating " + best.string() + " (epoch " + std::to_string(state.best_epoch + 1) + ")");
  const std::optional<ValidationReport> report = validation_pass(/*plots=*/true);
  if (!report) return;
  say(report->table(cfg.verbose));
  if (outputs.plots) task->plot_validation(*outputs.plots, *report, plan.run_dir);
  EpochMetrics m = last_metrics.value_or(task->epoch_metrics());
  m.epoch = state.best_epoch + 1;
  task->fill_validation(m, *report);
  last_metrics = m;
}

bool Trainer::Run::end_epoch(EpochMetrics& m) {
  recovery_attempts = 0;  // a clean epoch: the roll-back budget is whole again (Ultralytics 8.4)
  m.epoch = state.epoch + 1;
  m.time = clock.leader_elapsed >= 0 ? clock.leader_elapsed : elapsed();  // rank 0's, as `time=` reads it
  set_losses(m);
  const auto order = reported_groups(choice.name, cfg.ultralytics84());
  for (std::size_t g = 0; g < 3; ++g) m.set("lr/pg" + std::to_string(g), group_lr(*optimizer, order[g]));
  last_metrics = m;
  if (cb.on_fit_epoch_end) cb.on_fit_epoch_end(m);  // results.csv, results.png, the line, status.json
  const bool improved = state.note_fitness(m.fitness, cfg.ultralytics84());
  // The epoch is done: the position moves to the start of the next one before saving.
  ++state.epoch;
  state.batch = 0;
  std::fill(state.loss_means.begin(), state.loss_means.end(), 0.0);
  const bool finished = state.epoch >= cfg.epochs;
  const bool patience_out = cfg.patience > 0 && state.epoch - 1 - state.stopper_epoch >= cfg.patience;
  const bool out_of_time = cfg.time > 0 && m.time >= cfg.time * 3600.0;
  const bool done = finished || patience_out || out_of_time;
  if (cfg.save && ranks.leader()) {
    checkpoint(true, done, /*force=*/true);
    if (improved) store->save_pinned(snapshot(done), "best");
    if (cfg.save_period > 0 && state.epoch % cfg.save_period == 0)
      store->save_pinned(snapshot(done), "epoch" + std::to_string(state.epoch));
  }
  if (plan.remote) plan.remote->upload_run_files();
  if (cb.on_epoch_end) cb.on_epoch_end(m);
  if (patience_out) result.reason = "early stopping: no improvement in " + std::to_string(cfg.patience) + " epochs";
  if (out_of_time) result.reason = "time limit of " + exact_text(cfg.time) + " h reached";
  if (finished) result.reason = "epochs done";
  return !done;
}

void Trainer::Run::set_losses(EpochMetrics& m) const {
  const std::vector<std::string>& terms = task->loss_terms();
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (!m.set("train/" + terms[i], state.loss_means[i])) {
      throw Error("the loss term " + terms[i] + " has no figure train/" + terms[i] + " (Task::epoch_metrics())");
    }
  }
}

TrainerProgress Trainer::Run::progress() const {
  std::array<double, 3> lr{};
  const auto order = reported_groups(choice.name, cfg.ultralytics84());
  for (std::size_t g = 0; optimizer && g < 3; ++g) lr[g] = group_lr(*optimizer, order[g]);
  TrainerProgress p;
  p.epoch = state.epoch;
  p.epochs = cfg.epochs;
  p.batch = state.batch;
  p.batches = nb;
  p.step = step();
  p.lr = lr;
  for (std::size_t i = 0; task && i < task->loss_terms().size(); ++i)
    p.losses.emplace_back(task->loss_terms()[i], state.loss_means[i]);
  p.losses_step = losses_step;
  p.instances = clock.last_instances;
  p.size = clock.last_size;
  p.epoch_seconds = seconds_since(clock.epoch_started);
  p.timed_batches = clock.epoch_batches;
  p.timed_images = clock.epoch_images;
  return p;
}

void Trainer::Run::start() {
  result.run_dir = plan.run_dir;
  log.open(plan.run_dir / "train.log");
  control = std::make_unique<detail::ControlRun>(cfg, ranks, token);  // a port in use: exit 2 before any work
  preemption = std::make_unique<detail::PreemptionRun>(cfg, ranks, token, [this](const std::string& line) {
    if (ranks.leader()) return say(line);
    std::cerr << "rank " << ranks.rank() << ": " << line << std::endl;  // a notice only this machine heard
  });
  load_data();
  build();
  started_fresh = !plan.resume_from;
  if (plan.resume_from) restore();
  start_step = step();
  const std::optional<lc::CheckpointMeta> resumed =
      plan.resume_from ? std::optional<lc::CheckpointMeta>(plan.resume_from->meta) : std::nullopt;
  plan.resume_from.reset();
  // After restore: results.csv and TensorBoard's stream continue at the resumed position.
  outputs = detail::open_run_outputs(ranks.leader(), plan.run_dir, cfg, step(), state.epoch, state.results_csv);
  if (resumed) {  // the newest checkpoint until this process writes one (a stop at once names it)
    result.last_checkpoint = plan.resume_file;
    outputs.status->set_checkpoint(plan.resume_file, resumed->step, resumed->wall_time);
  }
  cb = detail::with_run_outputs(outputs, log, cfg, cb);
  control->attach(*outputs.status, plan.run_dir.filename().string(), cb);
  if (plan.remote) plan.remote->report_to(*outputs.status);
  if (outputs.plots && task->plots_labels()) {
    say("Plotting labels to " + (plan.run_dir / "labels.jpg").string() + "... ");
    plots::plot_training_labels(*outputs.plots, data.train, plan.run_dir);
  }
  if (ranks.active()) {  // every rank starts from rank 0's weights, as DDP does
    std::vector<at::Tensor> weights;
    for (const auto& [name, t] : nn::state_dict(*model)) weights.push_back(t);
    ranks.broadcast_tensors(weights);
    say("DDP: " + std::to_string(ranks.world_size()) + " ranks, batch " +
        std::to_string(cfg.batch / ranks.world_size()) + " per rank");
  }
  if (plan.remote) plan.remote->upload_run_files();
  clock.deadline = cfg.deadline_at(std::chrono::system_clock::now());
  set_state(lc::RunState::Running);
  if (cb.on_train_start) cb.on_train_start(progress());
  say("training " + std::to_string(cfg.epochs) + " epochs of " + std::to_string(nb) + " batches, " + choice.name +
      " lr " + std::to_string(choice.lr) + ", run folder " + plan.run_dir.string());
}

void Trainer::Run::train() {
  bool going = true, rolled_back = false;
  keep_start();
  while (going && state.epoch < cfg.epochs) {
    data.train_loader->seek(static_cast<int>(state.epoch), state.batch);
    tally.reset(state.loss_means, device);
    clock.last_tally_read = Clock::now();
    task->start_epoch(state.epoch, cfg.epochs);
    if (graphed) graphed->clear();  // an end-to-end loss's weights follow the epoch: captured anew
    train_mode();
    clock.epoch_started = Clock::now();
    clock.epoch_batches = clock.epoch_images = 0;
    if (cb.on_train_epoch_start) cb.on_train_epoch_start(progress());  // the progress header
    while (going && state.batch < nb) {
      try {
        if (!(going = poll())) break;
        const auto waited = Clock::now();
        auto b = data.train_loader->next();
        result.timings.data_s += seconds_since(waited);
        if (!b) {
          going = !token.stop_requested() || poll();  // a stop while waiting for data
          break;
        }
        try {
          train_batch(*b);
        } catch (const std::exception& e) {
          out_of_memory(e);  // the first epoch's out-of-memory: restarted with half the batch; else rethrown
        }
        if (tally_due()) read_tally();  // a NaN/Inf step since the last read: NonFiniteTraining
      } catch (const NonFiniteTraining& e) {
        roll_back(e.what());  // back to the newest checkpoint: the loop goes on from its position
        rolled_back = true;
        break;
      }
      if (cb.on_batch_end) cb.on_batch_end(progress());  // the progress line, status.json
    }
    if (std::exchange(rolled_back, false)) continue;
    if (!going) break;
    EpochMetrics m = task->epoch_metrics();
    bool validated = true;
    if ((cfg.val || state.epoch + 1 >= cfg.epochs) && ranks.leader()) validated = validate(m);  // the others wait
    if (!share_epoch_end(m, validated)) {
      going = poll();  // a stop inside validation: the checkpoint below re-runs it on resume
      break;
    }
    going = end_epoch(m);
  }
}

void Trainer::Run::finish() {
  result.epoch = state.epoch;
  result.step = step();
  result.metrics = last_metrics;
  if (result.outcome != RunOutcome::Completed) {
    set_state(lc::RunState::Stopping);
    checkpoint(true);
    set_state(lc::RunState::Stopped);
  } else {
    if (result.reason.empty()) result.reason = "epochs done";
    if (ranks.leader()) final_eval();
    result.metrics = last_metrics;
    set_state(lc::RunState::Completed);
  }
  finish_plots();
  finish_remote();
  finish_control();
  // No rank leaves before rank 0's checkpoint is written: torchrun SIGTERMs the others as soon as
  // one exits with a non-zero code.
  ranks.barrier();
  if (preemption) preemption->finish(result.outcome != RunOutcome::Completed);  // Azure: acknowledged once safe
  say(std::string(to_string(result.outcome)) + " (" + result.reason + ") at epoch " + std::to_string(state.epoch) +
      ", step " + std::to_string(step()) + "; checkpoint " + result.last_checkpoint.string());
  if (scaler.enabled()) {
    const GradScaler::Reading r = scaler.read();
    result.amp_skipped_steps = r.skipped_steps;
    char scale[32];
    std::snprintf(scale, sizeof(scale), "%g", r.scale);
    say("amp: the gradient scaler skipped " + std::to_string(result.amp_skipped_steps) +
        " optimizer steps with inf/NaN gradients in this process (scale now " + scale + ")");
  }
  say("Results saved to " + plan.run_dir.string());
  if (outputs.plots && result.outcome == RunOutcome::Completed && fs::exists(plan.run_dir / "val_batch0_pred.jpg")) {
    say("predictions on validation images: " + (plan.run_dir / "val_batch0_pred.jpg").string() + "; curves: " +
        (plan.run_dir / "results.png").string());
  }
}

RunResult Trainer::Run::run() {
  start();
  train();
  finish();
  return result;
}

}  // namespace yolotrain::engine
