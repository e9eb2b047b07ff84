// resolve_run: the run folder and the checkpoint a run resumes from (local or in the bucket), the
// folder's lock, the bucket, and the stored arguments a resumed run adopts.
#include "run_plan.hpp"

#include "run_folder.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/remote/s3_client.hpp"

namespace yolotrain::engine {
namespace fs = std::filesystem;
namespace lc = lifecycle;
namespace {

// Arguments a resumed run may change; everything else comes from the checkpoint, so that the
// resumed run trains exactly as the interrupted one would have.
const char* const kResumeOverridable[] = {
    "epochs",          "patience",     "time",          "deadline",       "save_interval",     "pause_release",
    "status_interval", "metrics_file", "workers",       "threads",        "device",            "keep_last",
    "dist_timeout",    "verbose",      "remote",        "remote_timeout", "tensorboard",       "signal_stop",
    "signal_pause",    "signal_resume", "signal_checkpoint", "signal_suspend", "save_period",
    "preemption",      "preemption_interval"};

// Rank 0's part: finds, locks and opens; returns the checkpoint's path ("" for a fresh start).
class LeaderResolver {
 public:
  LeaderResolver(RunPlan& plan, const std::function<void(const std::string&)>& say) : plan_(plan), say_(say) {}
  fs::path resolve();
  void open_remote(bool fresh);

 private:
  fs::path resolve_folder(const fs::path& target);
  void lock(const fs::path& dir);

  RunPlan& plan_;
  fs::path locked_;
  const std::function<void(const std::string&)>& say_;
  TrainConfig& cfg_ = plan_.cfg;
};

// One writer per run folder (rank 0 for the group): a second process on it is refused.
void LeaderResolver::lock(const fs::path& dir) {
  plan_.run_dir = dir;
  if (plan_.lock && locked_ == dir) return;
  plan_.lock.reset();
  try {
    plan_.lock.emplace(dir);
    locked_ = dir;
  } catch (const lc::FolderLockedError& e) {
    throw ConfigError(e.what());
  } catch (const Error& e) {  // a folder this process cannot write
    throw ConfigError(std::string(e.what()) + "; choose another project= or check its permissions");
  }
}

// remote=: the bucket checked before any training; a fresh run refuses a prefix holding a run.
void LeaderResolver::open_remote(bool fresh) {
  if (cfg_.remote.empty() || cfg_.remote == "off") return;
  plan_.remote = std::make_unique<detail::RemoteRun>(cfg_.remote, plan_.run_dir, static_cast<int>(cfg_.keep_last),
                                                     say_);
  if (fresh) plan_.remote->refuse_existing_run();
}

fs::path LeaderResolver::resolve() {
  if (yolotrain::remote::S3Location::is_url(cfg_.resume)) {  // resume=s3://...: that bucket, into project/name
    if (cfg_.remote.empty()) cfg_.remote = cfg_.resume;
    cfg_.resume = "true";
  }
  if (cfg_.resume == "false") {
    lock(make_run_dir(cfg_.project, cfg_.name, cfg_.exist_ok));
    open_remote(/*fresh=*/true);
    return {};
  }
  fs::path target = cfg_.resume == "true" ? fs::path(cfg_.project) / cfg_.name : fs::path(cfg_.resume);
  if (cfg_.resume == "true") {  // Ultralytics' form: model=.../weights/last.pt resume=True
    const fs::path model(cfg_.model);
    if (model.extension() == ".ytckpt" && fs::is_regular_file(model)) target = model;
    if (model.extension() == ".pt" && !fs::exists(model) && model.parent_path().filename() == "weights") {
      target = model.parent_path().parent_path();
      say_("resume: " + cfg_.model + " does not exist (yolo_train's checkpoints are weights/last-<step>.ytckpt); "
           "resuming the newest checkpoint of " + target.string());
    }
  } else if (!fs::exists(target)) {  // an explicit path is never a fresh start: a typo must not train from scratch
    throw ConfigError("resume=" + cfg_.resume + ": no such checkpoint or run folder; give a .ytckpt file, a run "
                      "folder (project/name) or resume=true");
  }
  if (!fs::is_regular_file(target)) return resolve_folder(target);
  if (target.extension() != ".ytckpt") {
    throw ConfigError("resume=" + target.string() + ": not a yolo_train checkpoint (.ytckpt); to start from "
                      "weights, give them as model= instead");
  }
  lock(target.parent_path().parent_path());
  open_remote(/*fresh=*/false);
  plan_.resume_from = lc::CheckpointStore::load(target);
  return target;
}

// The newest usable checkpoint of a run folder, or the bucket's when it is newer.
fs::path LeaderResolver::resolve_folder(const fs::path& target) {
  lock(target);
  open_remote(/*fresh=*/false);
  lc::CheckpointStore probe({target / "weights", 2, "", "last", {}});
  lc::LoadResult found = probe.load_latest();
  for (const auto& s : found.skipped) {
    say_("resume: skipping " + s.path.string() + " (" + s.reason + "); trying the previous one");
  }
  // The bucket's newest checkpoint when it is newer than the folder's (a new machine has none).
  const std::int64_t local_step = found.checkpoint ? found.checkpoint->meta.step : -1;
  const fs::path fetched = plan_.remote ? plan_.remote->fetch_newer(local_step) : fs::path();
  if (!fetched.empty()) {
    plan_.resume_from = lc::CheckpointStore::load(fetched);
    return fetched;
  }
  if (!found.checkpoint && !found.skipped.empty()) {
    throw Error("resume: no usable checkpoint in " + (target / "weights").string() +
                " (see above); move the damaged files away to start over");
  }
  plan_.resume_from = std::move(found.checkpoint);
  if (plan_.resume_from) return found.path;
  say_("resume: no checkpoint in " + (target / "weights").string() + (plan_.remote ? " nor in " + cfg_.remote : "") +
       " yet; starting from scratch");
  lock(make_run_dir(cfg_.project, cfg_.name, true));
  if (plan_.remote && plan_.run_dir != target) open_remote(/*fresh=*/true);
  return {};
}

// The stored arguments win, except those a resumed run may change.
void adopt_stored_config(RunPlan& plan) {
  TrainConfig stored;
  stored.compat = "8.3";  // checkpoints without compat= were written when every model was built like 8.3
  stored.load_yaml_text(plan.resume_from->meta.config, "the checkpoint's arguments");
  const TrainConfig defaults;
  for (const char* key : kResumeOverridable) {
    if (plan.cfg.get(key) != defaults.get(key)) stored.set(key, plan.cfg.get(key));
  }
  stored.resume = plan.cfg.resume;
  // The run trains in the folder it was resumed in (another machine, another path): args.yaml and
  // the next checkpoints say so.
  if (fs::path(stored.project) / stored.name != plan.run_dir) {
    stored.project = plan.run_dir.parent_path().string();
    stored.name = plan.run_dir.filename().string();
  }
  plan.cfg = stored;
  const auto completed = plan.resume_from->meta.extra.find("completed");
  const bool finished = completed != plan.resume_from->meta.extra.end() && completed->second == "1";
  if (finished && plan.cfg.epochs <= plan.resume_from->meta.epoch + 1) {
    throw ConfigError("the run in " + plan.run_dir.string() + " already finished its " +
                      std::to_string(plan.cfg.epochs) +
                      " epochs; pass a larger epochs= to train longer, or start a new run without resume");
  }
}

}  // namespace

RunPlan resolve_run(TrainConfig cfg, RankGroup& ranks, const std::function<void(const std::string&)>& say) {
  RunPlan plan;
  plan.cfg = std::move(cfg);
  const fs::path checkpoint = ranks.leader() ? LeaderResolver(plan, say).resolve() : fs::path();
  plan.run_dir = ranks.broadcast_string(plan.run_dir.string());
  const fs::path shared = ranks.broadcast_string(checkpoint.string());
  plan.resume_file = shared;
  if (!ranks.leader() && !shared.empty()) plan.resume_from = lc::CheckpointStore::load(shared);
  if (plan.resume_from) adopt_stored_config(plan);
  if (ranks.leader() && !plan.remote) LeaderResolver(plan, say).open_remote(/*fresh=*/false);  // the stored remote=
  return plan;
}

}  // namespace yolotrain::engine
