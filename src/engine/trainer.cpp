#include "yolotrain/engine/trainer.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "mixed_precision.hpp"
#include "optimizer.hpp"
#include "progress_line.hpp"
#include "rank_group.hpp"
#include "remote_run.hpp"
#include "run_outputs.hpp"
#include "run_folder.hpp"
#include "training_memory_probe.hpp"
#include "validation.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/rng.hpp"
#include "yolotrain/engine/autobatch.hpp"
#include "yolotrain/engine/model_ema.hpp"
#include "yolotrain/engine/tensorboard_logger.hpp"
#include "yolotrain/dist/process_group.hpp"
#include "yolotrain/dist/watchdog.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint_store.hpp"
#include "yolotrain/lifecycle/cuda_guard.hpp"
#include "yolotrain/lifecycle/folder_lock.hpp"
#include "yolotrain/lifecycle/host_memory.hpp"
#include "yolotrain/lifecycle/pause.hpp"
#include "yolotrain/lifecycle/s3_client.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/memory_format.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/plots/batch_plots.hpp"

namespace yolotrain::engine {
namespace fs = std::filesystem;
namespace lc = lifecycle;
using Clock = std::chrono::steady_clock;

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

namespace {

// Arguments a resumed run may change; everything else comes from the checkpoint, so that the
// resumed run trains exactly as the interrupted one would have.
const char* const kResumeOverridable[] = {
    "epochs",        "patience",          "time",          "deadline",     "save_interval", "pause_release",
    "status_interval", "metrics_file",    "workers",       "threads",      "device",        "keep_last",
    "dist_timeout",    "verbose",         "remote",        "remote_timeout", "tensorboard",
    "signal_stop",   "signal_pause",      "signal_resume", "signal_checkpoint", "signal_suspend", "save_period"};

// What args.yaml and checkpoints say for a run on a program's in-memory data.
constexpr const char* kMemoryData = "memory";

std::string extra(const lc::CheckpointMeta& meta, const std::string& key, const std::string& fallback = "0") {
  const auto it = meta.extra.find(key);
  return it == meta.extra.end() ? fallback : it->second;
}

std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);  // hex float: round-trips bit for bit
  return buf;
}

}  // namespace

// Everything one run holds; Trainer::run() creates it, runs it and throws it away.
struct Trainer::Run {
  Run(TrainConfig cfg, const TrainerCallbacks& cb, lc::ControlToken& token, const std::optional<TrainingData>& given)
      : cfg(std::move(cfg)), cb(cb), token(token), given(given) {}

  TrainConfig cfg;
  TrainerCallbacks cb;  // the program's listeners, then the run's own (TensorBoard)
  lc::ControlToken& token;
  const std::optional<TrainingData>& given;  // a program's in-memory data instead of data=
  RankGroup ranks;  // the other processes of a torchrun launch; a pass-through when alone
  double leader_elapsed = -1;  // rank 0's training time at this epoch's end (all ranks decide alike)
  std::optional<lc::Checkpoint> resume_from;
  fs::path run_dir;
  torch::Device device{torch::kCPU};
  c10::MemoryFormat memory_format = c10::MemoryFormat::Contiguous;
  data::DataConfig data_config;
  data::Dataset train_set, val_set;
  nn::DetectionModel model{nullptr};
  std::unique_ptr<ModelEMA> ema;
  OptimizerChoice choice;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<loss::DetectionLoss> criterion;
  std::unique_ptr<data::Loader> train_loader, val_loader;
  std::unique_ptr<plots::PlotWriter> plot_writer;  // rank 0 with plots=true: pictures off this thread
  std::unique_ptr<lc::CheckpointStore> store;
  std::unique_ptr<lc::RunStatus> status;
  std::unique_ptr<detail::RemoteRun> remote;  // rank 0 with remote=: the run folder mirrored to a bucket
  std::unique_ptr<TensorBoardLogger> tensorboard;  // rank 0 with tensorboard=true
  std::optional<lc::FolderLock> folder_lock;  // rank 0: held for the whole run
  fs::path locked_dir;
  std::ofstream log_file;

  std::int64_t epoch = 0, batch = 0, nb = 1, last_opt_step = -1, best_epoch = -1;
  double best_fitness = -1, elapsed_before = 0;
  std::array<double, 3> tloss{0, 0, 0};
  detail::ResultsCsv results;  // results.csv (its text travels in checkpoints)
  std::optional<EpochMetrics> last_metrics;
  std::int64_t saved_step = -1;
  Clock::time_point started = Clock::now(), last_save = Clock::now();
  std::optional<std::chrono::system_clock::time_point> deadline;
  RunResult result;
  AmpMode amp = AmpMode::Off;
  GradScaler scaler{false};
  // The progress line: this epoch's timing in this process, the last batch's figures.
  bool tty = isatty(STDOUT_FILENO) == 1, line_open = false;
  Clock::time_point epoch_started = Clock::now(), last_print{};
  std::int64_t epoch_batches = 0, epoch_images = 0, last_instances = 0, last_size = 0;

  std::int64_t step() const { return epoch * nb + batch; }
  void say(const std::string& line);
  void log_only(const std::string& line);
  void report_problems(const std::string& prefix, const data::ScanReport& report);
  void set_state(lc::RunState s);
  void find_resume_checkpoint();
  fs::path find_resume_checkpoint_leader();
  void lock_run_dir();
  void open_remote(bool fresh);
  void finish_remote();
  void adopt_stored_config();
  void load_data();
  void load_data_yaml();
  void build();
  void restore();
  lc::Checkpoint snapshot(bool completed);
  // force: save even if this step was saved (an epoch's end shares its step number with the
  // position "epoch trained, not validated" saved before validation).
  void checkpoint(bool wait, bool completed = false, bool force = false);
  void freeze_layers();
  void resolve_autobatch();
  at::Tensor multi_scale(const at::Tensor& img, std::int64_t ni) const;
  void print_progress(bool epoch_end);
  void publish_progress();
  std::optional<ValidationReport> validation_pass();
  bool plot_validation = false;  // the final validation draws val_batch*.jpg
  void finish_plots();
  void final_eval();
  void report_saved();
  void schedule(std::int64_t ni);
  void optimizer_step();
  bool poll();  // false: leave the loop (stop, or pause with release=exit)
  lc::PauseEnd pause();
  bool share_epoch_end(EpochMetrics& m, bool validated);
  double elapsed() const;
  void train_batch(const data::Batch& b);
  bool validate(EpochMetrics& m);  // false: stopped inside validation
  bool end_epoch(EpochMetrics& m);  // false: training is over
  TrainerProgress progress() const;
  RunResult run();
};

void Trainer::Run::say(const std::string& line) {
  if (!ranks.leader()) return;  // rank 0 speaks for the group, as Ultralytics' LOGGER
  if (line_open) std::cout << "\n";
  line_open = false;
  std::cout << line << std::endl;
  if (log_file) log_file << line << std::endl;
}

void Trainer::Run::log_only(const std::string& line) {
  if (ranks.leader() && log_file) log_file << line << std::endl;
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

void Trainer::Run::set_state(lc::RunState s) {
  if (status) status->set_state(s);
  if (cb.on_state_change) cb.on_state_change(s);
}

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
      std::cout << "resume: " << cfg.model << " does not exist (yolo_train's checkpoints are "
                << "weights/last-<step>.ytckpt); resuming the newest checkpoint of " << target.string() << std::endl;
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
    std::cout << "resume: skipping " << s.path.string() << " (" << s.reason << "); trying the previous one"
              << std::endl;
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
    std::cout << "resume: no checkpoint in " << (target / "weights").string() << (remote ? " nor in " + cfg.remote : "")
              << " yet; starting from scratch" << std::endl;
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
  cfg = stored;
  if (extra(resume_from->meta, "completed") == "1" && cfg.epochs <= resume_from->meta.epoch + 1) {
    throw ConfigError("the run in " + run_dir.string() + " already finished its " + std::to_string(cfg.epochs) +
                      " epochs; pass a larger epochs= to train longer, or start a new run without resume");
  }
}

void Trainer::Run::load_data() {
  if (given) {  // a program's splits (data::memory_dataset)
    train_set = given->train;
    val_set = given->val;
    data_config.names = train_set.names;
  } else {
    load_data_yaml();
  }
  say("train: " + train_set.report.summary());
  report_problems("train: ", train_set.report);
  say("val: " + val_set.report.summary());
  report_problems("val: ", val_set.report);
  if (cfg.fraction < 1.0) {  // as Ultralytics: the first round(fraction * n) images
    const auto keep = static_cast<std::size_t>(python_round(cfg.fraction * double(train_set.size())));
    if (keep == 0) throw ConfigError("fraction=" + exact(cfg.fraction) + " leaves no training image of " +
                                     std::to_string(train_set.size()));
    train_set.records.resize(keep);
    say("fraction=" + std::to_string(cfg.fraction) + ": training on the first " + std::to_string(keep) + " images");
  }
  if (cfg.single_cls) {  // every class becomes class 0, "item"
    merge_classes(train_set);
    merge_classes(val_set);
    data_config.names = {"item"};
  }
}

void Trainer::Run::load_data_yaml() {
  if (cfg.data == kMemoryData) {
    throw ConfigError("data=memory: this run trained on a program's in-memory samples (engine::TrainingData); "
                      "resume it from that program, or give a data.yaml");
  }
  if (ranks.active()) {  // rank 0 writes the built-in set on first use while the others wait
    if (ranks.leader()) data_yaml(cfg);
    ranks.barrier();
  }
  const fs::path yaml = data_yaml(cfg);
  if (!fs::exists(yaml)) throw ConfigError("data=" + cfg.data + ": no such file; give a data.yaml or data=shapes");
  data_config = data::load_data_yaml(yaml);
  train_set = data::load_split(data_config, "train");
  val_set = data::load_split(data_config, data_config.has("val") ? "val" : "train");
}

namespace {

// The augmentation settings by name: a positional list would shift silently if a field moved.
data::AugmentConfig augment_config(const TrainConfig& cfg) {
  data::AugmentConfig a;
  a.hsv_h = cfg.hsv_h;
  a.hsv_s = cfg.hsv_s;
  a.hsv_v = cfg.hsv_v;
  a.degrees = cfg.degrees;
  a.translate = cfg.translate;
  a.scale = cfg.scale;
  a.shear = cfg.shear;
  a.perspective = cfg.perspective;
  a.flipud = cfg.flipud;
  a.fliplr = cfg.fliplr;
  a.mosaic = cfg.mosaic;
  a.mixup = cfg.mixup;
  return a;
}

// Weights a run starts from (model=*.pt|*.ytckpt|*.safetensors, or pretrained=FILE).
std::optional<io::ModelWeights> read_start_weights(const std::string& path) {
  try {
    return io::read_model_weights(path);
  } catch (const Error& e) {
    throw ConfigError(std::string(e.what()) + " (the weights to start training from)");
  }
}

}  // namespace

void Trainer::Run::build() {
  device = run_device(cfg.device, ranks.local_rank());
  torch::set_num_threads(intra_op_threads(cfg.threads, ranks.local_world_size()));
  if (cfg.plots && ranks.leader()) plot_writer = std::make_unique<plots::PlotWriter>();
  torch::manual_seed(static_cast<std::uint64_t>(cfg.seed));
  const bool from_weights = io::is_weights_file(cfg.model);
  std::optional<io::ModelWeights> start = from_weights ? read_start_weights(cfg.model) : std::nullopt;
  if (!start && cfg.pretrained != "true" && cfg.pretrained != "false") start = read_start_weights(cfg.pretrained);
  // From weights, the architecture is theirs (Ultralytics: DetectionModel(weights.yaml, nc=data's nc)).
  model = nn::DetectionModel(nn::DetectionModelOptions(from_weights ? start->model_yaml : cfg.model)
                                 .nc(data_config.nc())
                                 .names(data_config.names));
  if (cfg.imgsz % model->max_stride() != 0) {  // Ultralytics' check_imgsz(imgsz, stride=gs, floor=gs)
    const std::int64_t rounded = nn::check_imgsz(cfg.imgsz, model->max_stride());
    say("warning: imgsz=" + std::to_string(cfg.imgsz) + " must be a multiple of " +
        std::to_string(model->max_stride()) + ", updating to " + std::to_string(rounded));
    cfg.imgsz = rounded;
  }
  if (start && !resume_from) {  // a resumed run takes its weights from the checkpoint instead
    const std::size_t n = nn::transfer_weights(*model, start->tensors);
    say("Transferred " + std::to_string(n) + "/" + std::to_string(nn::state_dict(*model).size()) +
        " items from pretrained weights (" + start->description + ")");
  }
  freeze_layers();
  model->to(device);
  amp = amp_mode(cfg.amp, device);
  scaler = GradScaler(amp == AmpMode::Fp16Scaled);
  if (cfg.autobatch > 0) resolve_autobatch();
  // On the CPU, the measured faster layout (channels_last, docs/nn.md); batches follow it.
  memory_format = device.is_cpu() ? nn::preferred_cpu_memory_format() : c10::MemoryFormat::Contiguous;
  nn::set_memory_format(*model, memory_format);
  model->train();
  ema = std::make_unique<ModelEMA>(model);
  choice = choose_optimizer(cfg, static_cast<std::int64_t>(train_set.size()), data_config.nc());
  if (resume_from) {  // the stored choice: extending epochs must not flip optimizer=auto
    choice.name = extra(resume_from->meta, "optimizer", choice.name);
    choice.lr = std::strtod(extra(resume_from->meta, "lr").c_str(), nullptr);
    choice.momentum = std::strtod(extra(resume_from->meta, "momentum").c_str(), nullptr);
    choice.warmup_bias_lr = std::strtod(extra(resume_from->meta, "warmup_bias_lr").c_str(), nullptr);
  }
  optimizer = build_optimizer(model, choice);
  criterion = std::make_unique<loss::DetectionLoss>(model, loss::LossGains{cfg.box, cfg.cls, cfg.dfl});
  if (cfg.batch % ranks.world_size() != 0) {
    throw ConfigError("batch=" + std::to_string(cfg.batch) + " is the total over " + std::to_string(ranks.world_size()) +
                      " ranks and must divide evenly; use a multiple of " + std::to_string(ranks.world_size()));
  }
  data::LoaderOptions train_opts;
  train_opts.batch = static_cast<int>(cfg.batch / ranks.world_size());  // per rank, as Ultralytics divides it
  train_opts.rank = ranks.rank();
  train_opts.world_size = ranks.world_size();
  train_opts.imgsz = static_cast<int>(cfg.imgsz);
  train_opts.stride = static_cast<int>(model->max_stride());
  train_opts.workers = loader_workers(cfg);
  train_opts.seed = static_cast<std::uint64_t>(cfg.seed);
  train_opts.hyp = augment_config(cfg);
  train_opts.epochs = static_cast<int>(cfg.epochs);
  train_opts.close_mosaic = static_cast<int>(cfg.close_mosaic);
  train_opts.cache_ram = cfg.cache == "ram";
  train_opts.rect = cfg.rect;
  train_opts.pin_memory = device.is_cuda();  // as Ultralytics: a non-blocking copy of each batch
  // A stop ends a wait for data at once; with several ranks the stop waits for the step's
  // agreement instead (a rank leaving the step alone would desynchronise the collectives).
  train_opts.token = ranks.active() ? nullptr : &token;
  train_loader = std::make_unique<data::Loader>(train_set, train_opts);
  data::LoaderOptions val_opts = train_opts;
  val_opts.batch = train_opts.batch * 2;
  val_opts.rank = 0;  // rank 0 validates the whole set
  val_opts.world_size = 1;
  val_opts.token = &token;
  val_opts.augment = false;
  val_opts.shuffle = false;
  val_opts.rect = true;
  val_loader = std::make_unique<data::Loader>(val_set, val_opts);
  nb = train_loader->batches_per_epoch();
  const std::string model_id = model->yaml_path().filename().string() + ":" + model->scale() + ":nc" +
                               std::to_string(model->nc());
  store = std::make_unique<lc::CheckpointStore>(
      lc::CheckpointStoreOptions{run_dir / "weights", static_cast<int>(cfg.keep_last), model_id, "last", {}});
  if (remote) store->set_remote(remote->mirror());
}

// batch=-1 / 0.xx (Ultralytics' _setup_train: check_train_batch_size before the optimizer, whose
// weight decay scales with the batch). The batch chosen replaces -1 in the config, so args.yaml
// and the checkpoints hold it and a resumed run keeps it (Ultralytics' args.yaml keeps -1).
void Trainer::Run::resolve_autobatch() {
  const double fraction = cfg.autobatch;
  cfg.autobatch = 0;
  if (ranks.world_size() > 1) {  // Ultralytics' trainer, before it starts DDP
    say("WARNING 'batch<1' for AutoBatch is incompatible with Multi-GPU training, setting default 'batch=16'");
    cfg.batch = 16;
    return;
  }
  std::unique_ptr<MemoryProbe> probe;
  if (device.is_cuda()) probe = std::make_unique<detail::TrainingMemoryProbe>(model, device, cfg.imgsz, amp);
  const AutoBatchChoice choice = autobatch(probe.get(), cfg.imgsz, fraction, 16);
  for (const auto& line : choice.lines) say(line);
  cfg.batch = choice.batch;
}

// As Ultralytics: the DFL conv always, plus `freeze` (the first N layers, or listed indices).
void Trainer::Run::freeze_layers() {
  std::vector<std::string> prefixes{".dfl"};
  if (!cfg.freeze.empty()) {
    std::vector<std::int64_t> layers;
    if (cfg.freeze.find(',') == std::string::npos) {
      for (std::int64_t i = 0; i < std::stoll(cfg.freeze); ++i) layers.push_back(i);
    } else {
      std::stringstream in(cfg.freeze);
      for (std::string item; std::getline(in, item, ',');) layers.push_back(std::stoll(item));
    }
    for (auto i : layers) prefixes.push_back("model." + std::to_string(i) + ".");
  }
  std::int64_t frozen = 0;
  for (auto& p : model->named_parameters()) {
    bool freeze = false;
    for (const auto& prefix : prefixes) freeze = freeze || p.key().find(prefix) != std::string::npos;
    p.value().requires_grad_(!freeze);
    frozen += freeze;
  }
  if (!cfg.freeze.empty()) say("freeze=" + cfg.freeze + ": " + std::to_string(frozen) + " parameter tensors frozen");
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

void Trainer::Run::schedule(std::int64_t ni) {
  const std::int64_t nw = warmup_iterations(cfg, nb);
  const double target = choice.lr * lr_factor(cfg, epoch, cfg.epochs);
  for (std::size_t g = 0; g < 3; ++g) {
    if (ni <= nw) {
      set_group(*optimizer, g, interp(double(ni), double(nw), g == 0 ? choice.warmup_bias_lr : 0.0, target),
                interp(double(ni), double(nw), cfg.warmup_momentum, choice.momentum));
    } else {
      set_group(*optimizer, g, target, choice.momentum);
    }
  }
}

void Trainer::Run::optimizer_step() {
  const auto params = model->parameters();
  const bool finite = scaler.unscale(params);
  torch::nn::utils::clip_grad_norm_(params, 10.0);
  if (finite) optimizer->step();  // the scaler skips a step with inf/NaN gradients
  scaler.update(!finite);
  optimizer->zero_grad();
  ema->update(model);
}

lc::PauseEnd Trainer::Run::pause() {
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
  const lc::PauseEnd end = lc::pause_run(token, *status, lc::parse_pause_release(cfg.pause_release), step(), steps);
  if (end == lc::PauseEnd::Resumed && cb.on_resume) cb.on_resume(progress());
  if (end == lc::PauseEnd::Exit) {
    result.outcome = RunOutcome::Paused;
    result.reason = "pause_release=exit";
  }
  return end;
}

bool Trainer::Run::poll() {
  if (deadline && std::chrono::system_clock::now() >= *deadline) token.request_stop(lc::StopReason::Deadline);
  const double since_save = std::chrono::duration<double>(Clock::now() - last_save).count();
  const bool save_due = cfg.save_interval > 0 && since_save >= cfg.save_interval;
  if (save_due && ranks.active() && ranks.leader()) token.request_checkpoint();  // agreed below, like SIGHUP
  // Decisions come from the agreement (every rank alike), not from the token directly.
  const dist::AgreedRequests agreed = ranks.agree(token);
  if (agreed.checkpoint) {
    status->note_request("checkpoint");
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
    result.reason = token.stop_description();
    result.signal = token.stop_signal();
    status->note_request(result.reason + ": stop");
    return false;
  }
  if (save_due && !ranks.active()) checkpoint(false);
  return true;
}

double Trainer::Run::elapsed() const {
  return elapsed_before + std::chrono::duration<double>(Clock::now() - started).count();
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
  leader_elapsed = v[1];
  return v[0] != 0.0;
}

// Ultralytics' multi_scale: a size in [0.5, 1.5] imgsz (a multiple of the stride) per batch,
// drawn from (seed, step) so that a resumed run draws the same.
at::Tensor Trainer::Run::multi_scale(const at::Tensor& img, std::int64_t ni) const {
  const std::int64_t gs = model->max_stride();
  data::Rng rng(static_cast<std::uint64_t>(cfg.seed), 0x6d756c7469ull, static_cast<std::uint64_t>(ni));
  const auto lo = static_cast<std::uint64_t>(cfg.imgsz / 2), hi = static_cast<std::uint64_t>(cfg.imgsz * 3 / 2 + gs);
  const std::int64_t sz = static_cast<std::int64_t>(lo + rng.below(hi - lo)) / gs * gs;
  const double sf = double(sz) / double(std::max(img.size(2), img.size(3)));
  if (sf == 1.0) return img;
  std::vector<std::int64_t> ns;
  for (int d : {2, 3}) ns.push_back(static_cast<std::int64_t>(std::ceil(double(img.size(d)) * sf / gs)) * gs);
  namespace F = torch::nn::functional;
  return F::interpolate(img, F::InterpolateFuncOptions().size(ns).mode(torch::kBilinear).align_corners(false));
}

void Trainer::Run::train_batch(const data::Batch& b) {
  const std::int64_t ni = step();
  if (plot_writer && epoch == 0 && b.index < 3) plots::plot_training_batch(*plot_writer, b, ema->ema()->names(), run_dir);
  schedule(ni);
  auto t0 = Clock::now();
  at::Tensor img = data::preprocess_images(b.img, device);
  if (cfg.multi_scale) img = multi_scale(img, ni);
  const loss::Targets targets{b.batch_idx.to(device), b.cls.to(device), b.bboxes.to(device)};
  std::vector<at::Tensor> feats;
  {
    AutocastScope autocast(amp, device);
    feats = model->forward(img.contiguous(memory_format));
  }
  for (auto& f : feats) f = f.to(torch::kFloat);  // the loss runs in float32
  result.timings.forward_s += seconds_since(t0);
  t0 = Clock::now();
  const loss::LossOutput out = (*criterion)(feats, targets);
  result.timings.loss_s += seconds_since(t0);
  t0 = Clock::now();
  // With several ranks, Ultralytics scales the loss by the world size before DDP averages the
  // gradients, so a step equals one process's step on the whole global batch.
  scaler.scale(ranks.active() ? out.total * double(ranks.world_size()) : out.total).backward();
  result.timings.backward_s += seconds_since(t0);
  if (ranks.active()) {
    t0 = Clock::now();
    ranks.average_gradients(model->parameters());
    result.timings.optimizer_s += seconds_since(t0);
  }
  const at::Tensor items = out.items.to(torch::kCPU, torch::kDouble);
  for (int i = 0; i < 3; ++i) tloss[i] = (tloss[i] * double(batch) + items[i].item<double>()) / double(batch + 1);
  if (ni - last_opt_step >= accumulate_at(cfg, ni, nb)) {
    t0 = Clock::now();
    optimizer_step();
    result.timings.optimizer_s += seconds_since(t0);
    last_opt_step = ni;
  }
  ++batch;
  ++result.timings.steps;
  result.timings.images += b.img.size(0);
  ++epoch_batches;
  epoch_images += b.img.size(0);
  last_instances = b.cls.size(0);
  last_size = img.size(3);
}

void Trainer::Run::print_progress(bool epoch_end) {
  if (!cfg.verbose) return;
  const auto now = Clock::now();
  if (!tty && !epoch_end && now - last_print < std::chrono::seconds(5)) return;  // logs: a line per 5 s
  last_print = now;
  const lc::CudaMemory mem = lc::cuda_memory();
  ProgressFigures f;
  f.epoch = epoch;
  f.epochs = cfg.epochs;
  f.gpu_mem_gb = mem.cuda ? double(mem.reserved) / 1e9 : 0.0;
  f.losses = tloss;
  f.instances = last_instances;
  f.size = last_size;
  f.batch = batch;
  f.batches = nb;
  f.elapsed_s = seconds_since(epoch_started);
  f.timed_batches = epoch_batches;
  const std::string line = progress_line(f);
  if (tty) {
    std::cout << "\r" << line << "\033[K" << std::flush;  // rewrite in place; clear leftovers
    line_open = true;
  } else {
    std::cout << line << std::endl;
  }
  if (epoch_end) {
    if (line_open) std::cout << std::endl;
    line_open = false;
    if (log_file) log_file << line << std::endl;
  }
}

void Trainer::Run::publish_progress() {
  status->set_metric("box_loss", tloss[0]);
  status->set_metric("cls_loss", tloss[1]);
  status->set_metric("dfl_loss", tloss[2]);
  const double elapsed = seconds_since(epoch_started);
  if (elapsed > 0) status->set_throughput(double(epoch_images) / elapsed, "images/s");
  status->set_progress(step(), epoch);
}

std::optional<ValidationReport> Trainer::Run::validation_pass() {
  const auto t0 = Clock::now();
  ValidationPass pass{ema->ema(), val_loader.get(), criterion.get(), device, memory_format, cfg.iou, cfg.max_det,
                      cfg.single_cls, &token, plot_validation ? plot_writer.get() : nullptr, run_dir};
  std::optional<ValidationReport> report = run_validation(pass);
  result.timings.validation_s += seconds_since(t0);
  return report;
}

static void fill_validation(EpochMetrics& m, const ValidationReport& r) {
  m.precision = r.metrics.mp;
  m.recall = r.metrics.mr;
  m.map50 = r.metrics.map50;
  m.map = r.metrics.map;
  m.fitness = r.metrics.fitness;
  m.val_box_loss = r.loss[0];
  m.val_cls_loss = r.loss[1];
  m.val_dfl_loss = r.loss[2];
}

bool Trainer::Run::validate(EpochMetrics& m) {
  const std::optional<ValidationReport> report = validation_pass();
  if (!report) return false;  // stopped inside validation
  fill_validation(m, *report);
  m.epoch = epoch + 1;  // as results.csv numbers it (end_epoch fills the rest)
  if (cb.on_val_end) cb.on_val_end(m);
  return true;
}

// Waits for the queued pictures and says which could not be written (never failing the run).
void Trainer::Run::finish_plots() {
  if (!plot_writer) return;
  plot_writer->wait();
  for (const auto& w : plot_writer->take_warnings()) say("WARNING plot " + w);
}

// As Ultralytics' final_eval: validate best (read back from its file) and print the table.
void Trainer::Run::final_eval() {
  store->wait();
  const fs::path best = run_dir / "weights" / "best.ytckpt";
  if (!cfg.save || !fs::exists(best)) return;
  const lc::Checkpoint c = lc::CheckpointStore::load(best);
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, t] : nn::state_dict(*ema->ema())) t.copy_(c.tensor("ema." + name));
  }
  say("validating " + best.string() + " (epoch " + std::to_string(best_epoch + 1) + ")");
  plot_validation = true;
  const std::optional<ValidationReport> report = validation_pass();
  plot_validation = false;
  if (!report) return;
  say(report->table(cfg.verbose));
  if (plot_writer) plot_validation_results(*plot_writer, *report, run_dir);
  EpochMetrics m = last_metrics.value_or(EpochMetrics{});
  m.epoch = best_epoch + 1;
  fill_validation(m, *report);
  last_metrics = m;
}

bool Trainer::Run::end_epoch(EpochMetrics& m) {
  m.epoch = epoch + 1;
  m.box_loss = tloss[0];
  m.cls_loss = tloss[1];
  m.dfl_loss = tloss[2];
  m.lr_pg0 = group_lr(*optimizer, 0);
  m.lr_pg1 = group_lr(*optimizer, 1);
  m.lr_pg2 = group_lr(*optimizer, 2);
  last_metrics = m;
  if (cb.on_fit_epoch_end) cb.on_fit_epoch_end(m);  // results.csv, results.png, the line, status.json
  const bool improved = m.fitness > best_fitness;
  if (improved) {
    best_fitness = m.fitness;
    best_epoch = epoch;
  }
  // The epoch is done: the position moves to the start of the next one before saving.
  ++epoch;
  batch = 0;
  tloss = {0, 0, 0};
  const bool finished = epoch >= cfg.epochs;
  const bool patience_out = cfg.patience > 0 && epoch - 1 - best_epoch >= cfg.patience;
  const double trained = leader_elapsed >= 0 ? leader_elapsed : elapsed();
  const bool out_of_time = cfg.time > 0 && trained >= cfg.time * 3600.0;
  const bool done = finished || patience_out || out_of_time;
  if (cfg.save && ranks.leader()) {
    checkpoint(true, done, /*force=*/true);
    if (improved) store->save_pinned(snapshot(done), "best");
    if (cfg.save_period > 0 && epoch % cfg.save_period == 0) store->save_pinned(snapshot(done), "epoch" + std::to_string(epoch));
  }
  if (remote) remote->upload_run_files();
  if (cb.on_epoch_end) cb.on_epoch_end(m);
  if (patience_out) result.reason = "early stopping: no improvement in " + std::to_string(cfg.patience) + " epochs";
  if (out_of_time) result.reason = "time limit of " + exact(cfg.time) + " h reached";
  if (finished) result.reason = "epochs done";
  return !done;
}

TrainerProgress Trainer::Run::progress() const {
  std::array<double, 3> lr{};
  for (std::size_t g = 0; optimizer && g < 3; ++g) lr[g] = group_lr(*optimizer, g);
  return {epoch, cfg.epochs, batch, nb, step(), tloss[0], tloss[1], tloss[2], lr};
}

RunResult Trainer::Run::run() {
  ranks = RankGroup::from_environment(cfg.dist_timeout);
  find_resume_checkpoint();
  result.run_dir = run_dir;
  if (ranks.leader()) log_file.open(run_dir / "train.log", std::ios::app);
  load_data();
  build();
  if (plot_writer) {
    say("Plotting labels to " + (run_dir / "labels.jpg").string() + "... ");
    plots::plot_training_labels(*plot_writer, train_set, run_dir);
  }
  status = std::make_unique<lc::RunStatus>(
      ranks.leader() ? run_dir / "status.json" : fs::path(),
      std::chrono::milliseconds(static_cast<std::int64_t>(cfg.status_interval * 1000)));
  if (!cfg.metrics_file.empty() && ranks.leader()) status->set_textfile(cfg.metrics_file);
  results = detail::ResultsCsv(run_dir);
  cb.on_fit_epoch_end = detail::epoch_outputs(
      {&results, plot_writer.get(), status.get(), [this](const std::string& line) { say(line); }, cfg.epochs},
      cb.on_fit_epoch_end);
  if (remote) remote->report_to(*status);
  if (resume_from) restore();
  resume_from.reset();
  if (cfg.tensorboard && ranks.leader()) {  // after restore: the stream continues at this position
    tensorboard = std::make_unique<TensorBoardLogger>(run_dir, step(), epoch);
    tensorboard->listen(cb);
  }
  if (ranks.active()) {  // every rank starts from rank 0's weights, as DDP does
    std::vector<at::Tensor> state;
    for (const auto& [name, t] : nn::state_dict(*model)) state.push_back(t);
    ranks.broadcast_tensors(state);
    say("DDP: " + std::to_string(ranks.world_size()) + " ranks, batch " + std::to_string(cfg.batch / ranks.world_size()) +
        " per rank");
  }
  if (ranks.leader()) lc::atomic_write(run_dir / "args.yaml", cfg.to_yaml());
  if (remote) remote->upload_run_files();
  deadline = cfg.deadline_at(std::chrono::system_clock::now());
  set_state(lc::RunState::Running);
  if (cb.on_train_start) cb.on_train_start(progress());
  say("training " + std::to_string(cfg.epochs) + " epochs of " + std::to_string(nb) + " batches, " + choice.name +
      " lr " + std::to_string(choice.lr) + ", run folder " + run_dir.string());
  bool going = true;
  while (going && epoch < cfg.epochs) {
    train_loader->seek(static_cast<int>(epoch), batch);
    model->train();
    epoch_started = Clock::now();
    epoch_batches = epoch_images = 0;
    if (cfg.verbose) say(progress_header());
    while (going && batch < nb) {
      if (!(going = poll())) break;
      const auto waited = Clock::now();
      auto b = train_loader->next();
      result.timings.data_s += seconds_since(waited);
      if (!b) {
        going = !token.stop_requested() || poll();  // a stop while waiting for data
        break;
      }
      train_batch(*b);
      print_progress(batch == nb);
      publish_progress();
      if (cb.on_batch_end) cb.on_batch_end(progress());
    }
    if (!going) break;
    EpochMetrics m;
    bool validated = true;
    if ((cfg.val || epoch + 1 >= cfg.epochs) && ranks.leader()) validated = validate(m);  // the others wait
    if (!share_epoch_end(m, validated)) {
      going = poll();  // a stop inside validation: the checkpoint below re-runs it on resume
      break;
    }
    going = end_epoch(m);
  }
  result.epoch = epoch;
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
  if (tensorboard) {
    for (const char* picture : {"results.png", "val_batch0_pred.jpg", "PR_curve.png"}) {
      tensorboard->add_picture(run_dir / picture, step());
    }
  }
  finish_remote();
  // No rank leaves before rank 0's checkpoint is written: torchrun SIGTERMs the others as soon as
  // one exits with a non-zero code.
  ranks.barrier();
  say(std::string(to_string(result.outcome)) + " (" + result.reason + ") at epoch " + std::to_string(epoch) +
      ", step " + std::to_string(step()) + "; checkpoint " + result.last_checkpoint.string());
  if (ranks.leader()) say("Results saved to " + run_dir.string());
  if (plot_writer && result.outcome == RunOutcome::Completed && fs::exists(run_dir / "val_batch0_pred.jpg")) {
    say("predictions on validation images: " + (run_dir / "val_batch0_pred.jpg").string() + "; curves: " +
        (run_dir / "results.png").string());
  }
  return result;
}

Trainer::Trainer(TrainConfig config, TrainerCallbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {}

Trainer::Trainer(TrainConfig config, TrainerCallbacks callbacks, TrainingData data)
    : config_(std::move(config)), callbacks_(std::move(callbacks)), data_(std::move(data)) {
  config_.data = kMemoryData;
}

Trainer::~Trainer() = default;

namespace {

// Freed activations stay in the process for the next step instead of being page-faulted in again
// (15-30 % of a CPU step); they go back to the kernel when the run ends.
struct KeepFreedHostMemory {
  KeepFreedHostMemory() { lc::keep_freed_host_memory(); }
  ~KeepFreedHostMemory() { lc::release_freed_host_memory(); }
};

}  // namespace

RunResult Trainer::run(lc::ControlToken& token) {
  lc::CudaGuard guard;
  KeepFreedHostMemory host_memory;
  Run run(config_, callbacks_, token, data_);
  RunResult result;
  try {
    result = run.run();
  } catch (const ConfigError&) {
    throw;
  } catch (const dist::CollectiveError& e) {
    // A rank is gone: the step in flight is torn (gradients half averaged), so no checkpoint;
    // the last one stands, and torchrun --max-restarts resumes from it.
    if (!run.status) throw ConfigError(e.what());
    run.status->set_error(e.what());
    run.set_state(lc::RunState::Failed);
    result = run.result;
    result.outcome = RunOutcome::Failed;
    result.reason = e.what();
    result.peer_lost = true;
  } catch (const std::exception& e) {
    // Found before training started (model YAML, dataset, run folder): the input must change.
    if (!run.status) throw ConfigError(e.what());
    run.status->set_error(e.what());
    try {
      run.checkpoint(true);
    } catch (const std::exception& save_error) {
      std::cerr << "yolotrain: could not checkpoint after the failure: " << save_error.what() << std::endl;
    }
    run.set_state(lc::RunState::Failed);
    run.finish_remote();
    result = run.result;
    result.outcome = RunOutcome::Failed;
    result.reason = e.what();
  }
  if (callbacks_.on_train_end) callbacks_.on_train_end(result);
  return result;
}

bool prefer_avx512_kernels() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512 || std::getenv("ATEN_CPU_CAPABILITY") != nullptr) return false;
  return setenv("ATEN_CPU_CAPABILITY", "avx512", 0) == 0;
#else
  return false;
#endif
}

}  // namespace yolotrain::engine
