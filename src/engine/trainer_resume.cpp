// Trainer::Run: the run folder and the checkpoint a run resumes from (local or in the bucket),
// the stored arguments it adopts, snapshots and saves.
#include "trainer_run.hpp"

namespace yolotrain::engine {
using namespace run_detail;

// Rank 0 finds the run folder and the checkpoint to resume; the other ranks read the same file.
void Trainer::Run::find_resume_checkpoint() {
  const fs::path checkpoint = ranks.leader() ? find_resume_checkpoint_leader() : fs::path();
  run_dir = ranks.broadcast_string(run_dir.string());
  const fs::path shared = ranks.broadcast_string(checkpoint.string());
  if (!ranks.leader() && !shared.empty()) resume_from = lc::CheckpointStore::load(shared);
  if (resume_from) adopt_stored_config();
  if (ranks.leader() && !remote) open_remote(/*fresh=*/false);  // the stored remote= keeps mirroring
}

// One writer per run folder (rank 0 for the group): a second process on it is refused.
void Trainer::Run::lock_run_dir() {
  if (folder_lock && locked_dir == run_dir) return;
  folder_lock.reset();
  try {
    folder_lock.emplace(run_dir);
    locked_dir = run_dir;
  } catch (const lc::FolderLockedError& e) {
    throw ConfigError(e.what());
  }
}

// The run folder, and the checkpoint to resume from (loaded into resume_from; empty: none).
fs::path Trainer::Run::find_resume_checkpoint_leader() {
  if (lc::S3Location::is_url(cfg.resume)) {  // resume=s3://...: that bucket, into project/name
    if (cfg.remote.empty()) cfg.remote = cfg.resume;
    cfg.resume = "true";
  }
  if (cfg.resume == "false") {
    run_dir = make_run_dir(cfg.project, cfg.name, cfg.exist_ok);
    lock_run_dir();
    open_remote(/*fresh=*/true);
    return {};
  }
  fs::path target = cfg.resume == "true" ? fs::path(cfg.project) / cfg.name : fs::path(cfg.resume);
  if (cfg.resume == "true") {  // Ultralytics' form: model=.../weights/last.pt resume=True
    const fs::path model(cfg.model);
    if (model.extension() == ".ytckpt" && fs::is_regular_file(model)) target = model;
    if (model.extension() == ".pt" && !fs::exists(model) && model.parent_path().filename() == "weights") {
      target = model.parent_path().parent_path();
      say("resume: " + cfg.model + " does not exist (yolo_train's checkpoints are weights/last-<step>.ytckpt); "
          "resuming the newest checkpoint of " + target.string());
    }
  } else if (!fs::exists(target)) {  // an explicit path is never a fresh start: a typo must not train from scratch
    throw ConfigError("resume=" + cfg.resume + ": no such checkpoint or run folder; give a .ytckpt file, a run folder "
                      "(project/name) or resume=true");
  }
  if (fs::is_regular_file(target)) {
    if (target.extension() != ".ytckpt") {
      throw ConfigError("resume=" + target.string() + ": not a yolo_train checkpoint (.ytckpt); to start from "
                        "weights, give them as model= instead");
    }
    run_dir = target.parent_path().parent_path();
    lock_run_dir();
    open_remote(/*fresh=*/false);
    resume_from = lc::CheckpointStore::load(target);
    return target;
  }
  run_dir = target;
  lock_run_dir();
  open_remote(/*fresh=*/false);
  lc::CheckpointStore probe({target / "weights", 2, "", "last", {}});
  lc::LoadResult found = probe.load_latest();
  for (const auto& s : found.skipped) {
    say("resume: skipping " + s.path.string() + " (" + s.reason + "); trying the previous one");
  }
  // The bucket's newest checkpoint when it is newer than the folder's (a new machine has none).
  const fs::path fetched = remote ? remote->fetch_newer(found.checkpoint ? found.checkpoint->meta.step : -1) : fs::path();
  if (!fetched.empty()) {
    resume_from = lc::CheckpointStore::load(fetched);
    return fetched;
  }
  if (!found.checkpoint && !found.skipped.empty()) {
    throw Error("resume: no usable checkpoint in " + (target / "weights").string() +
                " (see above); move the damaged files away to start over");
  }
  resume_from = std::move(found.checkpoint);
  if (!resume_from) {
    say("resume: no checkpoint in " + (target / "weights").string() + (remote ? " nor in " + cfg.remote : "") +
        " yet; starting from scratch");
    run_dir = make_run_dir(cfg.project, cfg.name, true);
    lock_run_dir();
    if (remote && run_dir != target) open_remote(/*fresh=*/true);
    return {};
  }
  return found.path;
}

// remote=: the bucket checked before any training; a fresh run refuses a prefix holding a run.
void Trainer::Run::open_remote(bool fresh) {
  if (cfg.remote.empty() || cfg.remote == "off") return;
  remote = std::make_unique<detail::RemoteRun>(cfg.remote, run_dir, static_cast<int>(cfg.keep_last),
                                               [this](const std::string& line) { say(line); });
  if (fresh) remote->refuse_existing_run();
}

// A stop waits for the final checkpoint's upload at most remote_timeout seconds.
void Trainer::Run::finish_remote() {
  if (remote) result.remote_uploaded = remote->finish(cfg.remote_timeout, result.last_checkpoint);
}

// The stored arguments win, except those a resumed run may change.
void Trainer::Run::adopt_stored_config() {
  TrainConfig stored;
  stored.load_yaml_text(resume_from->meta.config, "the checkpoint's arguments");
  const TrainConfig defaults;
  for (const char* key : kResumeOverridable) {
    if (cfg.get(key) != defaults.get(key)) stored.set(key, cfg.get(key));
  }
  stored.resume = cfg.resume;
  // The run trains in the folder it was resumed in (another machine, another path): args.yaml and
  // the next checkpoints say so.
  if (fs::path(stored.project) / stored.name != run_dir) {
    stored.project = run_dir.parent_path().string();
    stored.name = run_dir.filename().string();
  }
  cfg = stored;
  if (extra(resume_from->meta, "completed") == "1" && cfg.epochs <= resume_from->meta.epoch + 1) {
    throw ConfigError("the run in " + run_dir.string() + " already finished its " + std::to_string(cfg.epochs) +
                      " epochs; pass a larger epochs= to train longer, or start a new run without resume");
  }
}

void Trainer::Run::restore() {
  const lc::Checkpoint& c = *resume_from;
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
  const at::Tensor tl = c.tensor("state.tloss");
  for (int i = 0; i < 3; ++i) tloss[i] = tl[i].item<double>();
  epoch = c.meta.epoch;
  batch = std::stoll(extra(c.meta, "batch"));
  // The data position in global samples, so that any number of ranks continues it.
  if (c.meta.extra.count("samples")) batch = train_loader->batch_for_global_samples(std::stoll(extra(c.meta, "samples")));
  last_opt_step = std::stoll(extra(c.meta, "last_opt_step", "-1"));
  ema->updates = std::stoll(extra(c.meta, "ema_updates"));
  best_fitness = std::strtod(extra(c.meta, "best_fitness", "-1").c_str(), nullptr);
  best_epoch = std::stoll(extra(c.meta, "best_epoch", "-1"));
  scaler.scale_value = std::strtod(extra(c.meta, "scaler_scale", "0x1p+16").c_str(), nullptr);
  scaler.growth_tracker = std::stoll(extra(c.meta, "scaler_growth_tracker", "0"));
  elapsed_before = std::strtod(extra(c.meta, "elapsed_s").c_str(), nullptr);
  results.restore(extra(c.meta, "results_csv", ""));
  saved_step = step();
  say("resumed from step " + std::to_string(step()) + " (epoch " + std::to_string(epoch + 1) + ", batch " +
      std::to_string(batch) + ")");
}

lc::Checkpoint Trainer::Run::snapshot(bool completed) {
  lc::NamedTensors live;
  for (const auto& [name, t] : nn::state_dict(*model)) live.emplace_back("model." + name, t);
  for (const auto& [name, t] : nn::state_dict(*ema->ema())) live.emplace_back("ema." + name, t);
  for (auto& e : optimizer_state(*optimizer, choice.name, "optim.")) live.push_back(std::move(e));
  if (step() - 1 != last_opt_step) {  // gradients accumulated since the last optimizer step
    for (const auto& p : model->named_parameters()) {
      if (p.value().grad().defined()) live.emplace_back("grad." + p.key(), p.value().grad());
    }
  }
  auto gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    live.emplace_back("rng.cpu", gen.get_state());
  }
  live.emplace_back("state.tloss", at::tensor({tloss[0], tloss[1], tloss[2]}, at::kDouble));
  lc::Checkpoint c;
  c.meta.step = step();
  c.meta.epoch = epoch;
  c.meta.config = cfg.to_yaml();
  c.meta.extra = {{"names", io::encode_names(model->names())},
                  {"batch", std::to_string(batch)},
                  {"samples", std::to_string(train_loader->global_samples(batch))},
                  {"world_size", std::to_string(ranks.world_size())},
                  {"last_opt_step", std::to_string(last_opt_step)},
                  {"ema_updates", std::to_string(ema->updates)},
                  {"best_fitness", exact(best_fitness)},
                  {"best_epoch", std::to_string(best_epoch)},
                  {"optimizer", choice.name},
                  {"lr", exact(choice.lr)},
                  {"momentum", exact(choice.momentum)},
                  {"warmup_bias_lr", exact(choice.warmup_bias_lr)},
                  {"elapsed_s", exact(elapsed())},
                  {"scaler_scale", exact(scaler.scale_value)},
                  {"scaler_growth_tracker", std::to_string(scaler.growth_tracker)},
                  {"results_csv", results.text()},
                  {"completed", completed ? "1" : "0"}};
  c.tensors = lc::host_snapshot(live, store->take_spare());
  return c;
}

void Trainer::Run::checkpoint(bool wait, bool completed, bool force) {
  const auto t0 = Clock::now();
  if (cfg.save && ranks.leader() && (saved_step != step() || completed || force)) {
    store->save_async(snapshot(completed));
    saved_step = step();
    last_save = Clock::now();
  }
  if (wait) store->wait();
  report_saved();
  result.timings.checkpoint_s += seconds_since(t0);
}

void Trainer::Run::report_saved() {
  const auto saved = store->last_saved();
  if (!saved || saved->first == result.last_checkpoint) return;
  result.last_checkpoint = saved->first;
  status->set_checkpoint(saved->first, saved->second.step, saved->second.wall_time);
  if (cb.on_checkpoint) cb.on_checkpoint(saved->first);
}

}  // namespace yolotrain::engine
