#include "yolotrain/engine/trainer.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <thread>

#include "optimizer.hpp"
#include "run_folder.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/engine/model_ema.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint_store.hpp"
#include "yolotrain/lifecycle/cuda_guard.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/metrics/validator.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/memory_format.hpp"
#include "yolotrain/nn/weights.hpp"

namespace yolotrain::engine {
namespace fs = std::filesystem;
namespace lc = lifecycle;
using Clock = std::chrono::steady_clock;

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
    "signal_stop",   "signal_pause",      "signal_resume", "signal_checkpoint", "signal_suspend", "save_period"};

std::string extra(const lc::CheckpointMeta& meta, const std::string& key, const std::string& fallback = "0") {
  const auto it = meta.extra.find(key);
  return it == meta.extra.end() ? fallback : it->second;
}

std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);  // hex float: round-trips bit for bit
  return buf;
}

fs::path shapes_dataset(const TrainConfig& cfg) {
  const fs::path dir = fs::path(cfg.project) / ".shapes";
  if (fs::exists(dir / "data.yaml")) return dir / "data.yaml";
  std::cout << "data=shapes: writing the built-in synthetic dataset to " << dir.string() << std::endl;
  return data::write_shapes_dataset(dir, data::ShapesOptions{});
}

}  // namespace

// Everything one run holds; Trainer::run() creates it, runs it and throws it away.
struct Trainer::Run {
  Run(TrainConfig cfg, TrainerCallbacks& cb, lc::ControlToken& token) : cfg(std::move(cfg)), cb(cb), token(token) {}

  TrainConfig cfg;
  TrainerCallbacks& cb;
  lc::ControlToken& token;
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
  std::unique_ptr<lc::CheckpointStore> store;
  std::unique_ptr<lc::RunStatus> status;
  std::ofstream log_file;

  std::int64_t epoch = 0, batch = 0, nb = 1, last_opt_step = -1, best_epoch = -1;
  double best_fitness = -1, elapsed_before = 0;
  std::array<double, 3> tloss{0, 0, 0};
  std::string results_csv;
  std::optional<EpochMetrics> last_metrics;
  std::int64_t saved_step = -1;
  Clock::time_point started = Clock::now(), last_save = Clock::now();
  std::optional<std::chrono::system_clock::time_point> deadline;
  RunResult result;

  std::int64_t step() const { return epoch * nb + batch; }
  void say(const std::string& line);
  void set_state(lc::RunState s);
  void prepare();
  void find_resume_checkpoint();
  void load_data();
  void build();
  void restore();
  lc::Checkpoint snapshot(bool completed);
  // force: save even if this step was saved (an epoch's end shares its step number with the
  // position "epoch trained, not validated" saved before validation).
  void checkpoint(bool wait, bool completed = false, bool force = false);
  void report_saved();
  void schedule(std::int64_t ni);
  std::int64_t accumulate_at(std::int64_t ni) const;
  void optimizer_step();
  bool poll();  // false: leave the loop (stop, or pause with release=exit)
  bool pause();
  void train_batch(const data::Batch& b);
  bool validate(EpochMetrics& m);  // false: stopped inside validation
  bool end_epoch(EpochMetrics& m);  // false: training is over
  TrainerProgress progress() const;
  RunResult run();
};

void Trainer::Run::say(const std::string& line) {
  std::cout << line << std::endl;
  if (log_file) log_file << line << std::endl;
}

void Trainer::Run::set_state(lc::RunState s) {
  if (status) status->set_state(s);
  if (cb.on_state_change) cb.on_state_change(s);
}

void Trainer::Run::find_resume_checkpoint() {
  if (cfg.resume == "false") {
    run_dir = make_run_dir(cfg.project, cfg.name, cfg.exist_ok);
    return;
  }
  fs::path target = cfg.resume == "true" ? fs::path(cfg.project) / cfg.name : fs::path(cfg.resume);
  if (fs::is_regular_file(target)) {
    resume_from = lc::CheckpointStore::load(target);
    run_dir = target.parent_path().parent_path();
  } else {
    lc::CheckpointStore probe({target / "weights", 2, "", "last", {}});
    lc::LoadResult found = probe.load_latest();
    for (const auto& s : found.skipped) std::cout << "resume: skipping " << s.reason << std::endl;
    if (!found.checkpoint && !found.skipped.empty()) {
      throw Error("resume: no usable checkpoint in " + (target / "weights").string() +
                  " (see above); move the damaged files away to start over");
    }
    resume_from = std::move(found.checkpoint);
    run_dir = target;
    if (!resume_from) {
      std::cout << "resume: no checkpoint in " << (target / "weights").string() << " yet; starting from scratch"
                << std::endl;
      run_dir = make_run_dir(cfg.project, cfg.name, true);
      return;
    }
  }
  // The stored arguments win, except those a resumed run may change.
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
  const fs::path yaml = cfg.data == "shapes" || cfg.data.empty() ? shapes_dataset(cfg) : fs::path(cfg.data);
  if (!fs::exists(yaml)) throw ConfigError("data=" + cfg.data + ": no such file; give a data.yaml or data=shapes");
  data_config = data::load_data_yaml(yaml);
  train_set = data::load_split(data_config, "train");
  val_set = data::load_split(data_config, data_config.has("val") ? "val" : "train");
  say("train: " + train_set.report.summary());
  say("val: " + val_set.report.summary());
}

void Trainer::Run::build() {
  if (cfg.imgsz % 32 != 0) {
    const std::int64_t rounded = (cfg.imgsz + 31) / 32 * 32;
    say("warning: imgsz=" + std::to_string(cfg.imgsz) + " must be a multiple of 32, updating to " +
        std::to_string(rounded));
    cfg.imgsz = rounded;
  }
  const bool cuda = cfg.device.rfind("cuda", 0) == 0 || (cfg.device.empty() && lc::cuda_usable());
  if (cuda && !lc::cuda_usable()) throw ConfigError("device=" + cfg.device + ": no CUDA device is usable here");
  device = cuda ? torch::Device(cfg.device.empty() ? "cuda" : cfg.device) : torch::Device(torch::kCPU);
  torch::set_num_threads(cfg.threads > 0 ? static_cast<int>(cfg.threads)
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  torch::manual_seed(static_cast<std::uint64_t>(cfg.seed));
  model = nn::DetectionModel(nn::DetectionModelOptions(cfg.model).nc(data_config.nc()).names(data_config.names));
  if (cfg.pretrained != "true" && cfg.pretrained != "false") nn::load_weights(*model, cfg.pretrained, false);
  for (auto& p : model->named_parameters()) {
    if (p.key().find(".dfl") != std::string::npos) p.value().requires_grad_(false);  // as Ultralytics
  }
  model->to(device);
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
  data::LoaderOptions train_opts;
  train_opts.batch = static_cast<int>(cfg.batch);
  train_opts.imgsz = static_cast<int>(cfg.imgsz);
  // As Ultralytics: no more loader threads than cores (more only fight the training threads).
  train_opts.workers = static_cast<int>(
      std::min<std::int64_t>(cfg.workers, std::max(1u, std::thread::hardware_concurrency())));
  train_opts.seed = static_cast<std::uint64_t>(cfg.seed);
  train_opts.hyp = {cfg.hsv_h, cfg.hsv_s, cfg.hsv_v, cfg.degrees, cfg.translate, cfg.scale, cfg.shear,
                    cfg.perspective, cfg.flipud, cfg.fliplr, cfg.mosaic, cfg.mixup};
  train_opts.epochs = static_cast<int>(cfg.epochs);
  train_opts.close_mosaic = static_cast<int>(cfg.close_mosaic);
  train_opts.cache_ram = cfg.cache == "ram";
  train_opts.rect = cfg.rect;
  train_opts.token = &token;  // a stop ends a wait for data at once
  train_loader = std::make_unique<data::Loader>(train_set, train_opts);
  data::LoaderOptions val_opts = train_opts;
  val_opts.batch = static_cast<int>(cfg.batch * 2);
  val_opts.augment = false;
  val_opts.shuffle = false;
  val_opts.rect = true;
  val_loader = std::make_unique<data::Loader>(val_set, val_opts);
  nb = train_loader->batches_per_epoch();
  const std::string model_id = model->yaml_path().filename().string() + ":" + model->scale() + ":nc" +
                               std::to_string(model->nc());
  store = std::make_unique<lc::CheckpointStore>(
      lc::CheckpointStoreOptions{run_dir / "weights", static_cast<int>(cfg.keep_last), model_id, "last", {}});
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
      if (name == "grad." + p.key()) p.value().mutable_grad() = t.to(device);
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
  last_opt_step = std::stoll(extra(c.meta, "last_opt_step", "-1"));
  ema->updates = std::stoll(extra(c.meta, "ema_updates"));
  best_fitness = std::strtod(extra(c.meta, "best_fitness", "-1").c_str(), nullptr);
  best_epoch = std::stoll(extra(c.meta, "best_epoch", "-1"));
  elapsed_before = std::strtod(extra(c.meta, "elapsed_s").c_str(), nullptr);
  results_csv = extra(c.meta, "results_csv", "");
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
  const double elapsed = elapsed_before + std::chrono::duration<double>(Clock::now() - started).count();
  c.meta.extra = {{"batch", std::to_string(batch)},
                  {"last_opt_step", std::to_string(last_opt_step)},
                  {"ema_updates", std::to_string(ema->updates)},
                  {"best_fitness", exact(best_fitness)},
                  {"best_epoch", std::to_string(best_epoch)},
                  {"optimizer", choice.name},
                  {"lr", exact(choice.lr)},
                  {"momentum", exact(choice.momentum)},
                  {"warmup_bias_lr", exact(choice.warmup_bias_lr)},
                  {"elapsed_s", exact(elapsed)},
                  {"results_csv", results_csv},
                  {"completed", completed ? "1" : "0"}};
  c.tensors = lc::host_snapshot(live, store->take_spare());
  return c;
}

void Trainer::Run::checkpoint(bool wait, bool completed, bool force) {
  if (cfg.save && (saved_step != step() || completed || force)) {
    store->save_async(snapshot(completed));
    saved_step = step();
    last_save = Clock::now();
  }
  if (wait) store->wait();
  report_saved();
}

void Trainer::Run::report_saved() {
  const auto saved = store->last_saved();
  if (!saved || saved->first == result.last_checkpoint) return;
  result.last_checkpoint = saved->first;
  status->set_checkpoint(saved->first, saved->second.step, saved->second.wall_time);
  if (cb.on_checkpoint) cb.on_checkpoint(saved->first);
}

std::int64_t Trainer::Run::accumulate_at(std::int64_t ni) const {
  const double full = double(cfg.nbs) / double(cfg.batch);
  const std::int64_t nw = std::max<std::int64_t>(std::llround(cfg.warmup_epochs * double(nb)), 100);
  if (ni <= nw) return std::max<std::int64_t>(1, std::llround(interp(double(ni), double(nw), 1.0, full)));
  return std::max<std::int64_t>(std::llround(full), 1);
}

void Trainer::Run::schedule(std::int64_t ni) {
  const std::int64_t nw = std::max<std::int64_t>(std::llround(cfg.warmup_epochs * double(nb)), 100);
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
  torch::nn::utils::clip_grad_norm_(model->parameters(), 10.0);
  optimizer->step();
  optimizer->zero_grad();
  ema->update(model);
}

bool Trainer::Run::pause() {
  status->note_request("pause");
  set_state(lc::RunState::Pausing);
  checkpoint(true);
  if (cfg.pause_release == "exit") {
    result.outcome = RunOutcome::Paused;
    result.reason = "pause_release=exit";
    return false;
  }
  if (cfg.pause_release == "offload") {
    model->to(torch::kCPU);
    ema->ema()->to(torch::kCPU);
    rehome_optimizer_state(*optimizer, choice.name);
  }
  lc::cuda_release_cached();
  say("paused at step " + std::to_string(step()) + " (" + lc::describe(lc::cuda_memory()) + ")");
  set_state(lc::RunState::Paused);
  token.wait_while_paused();
  if (cfg.pause_release == "offload") {
    model->to(device);
    ema->ema()->to(device);
    rehome_optimizer_state(*optimizer, choice.name);
  }
  if (!token.stop_requested()) {
    status->note_request("resume");
    say("resumed at step " + std::to_string(step()));
  }
  set_state(lc::RunState::Running);
  return true;
}

bool Trainer::Run::poll() {
  if (deadline && std::chrono::system_clock::now() >= *deadline) token.request_stop(lc::StopReason::Deadline);
  if (token.take_checkpoint_request()) {
    status->note_request("checkpoint");
    checkpoint(true);
    say("checkpoint at step " + std::to_string(step()));
  }
  if (token.pause_requested() && !token.stop_requested() && !pause()) return false;
  if (token.stop_requested()) {
    result.outcome = RunOutcome::Stopped;
    result.reason = token.stop_description();
    result.signal = token.stop_signal();
    status->note_request(result.reason + ": stop");
    return false;
  }
  const double since_save = std::chrono::duration<double>(Clock::now() - last_save).count();
  if (cfg.save_interval > 0 && since_save >= cfg.save_interval) checkpoint(false);
  return true;
}

void Trainer::Run::train_batch(const data::Batch& b) {
  const std::int64_t ni = step();
  schedule(ni);
  const loss::Targets targets{b.batch_idx.to(device), b.cls.to(device), b.bboxes.to(device)};
  const loss::LossOutput out = (*criterion)(model->forward(b.img.to(device).contiguous(memory_format)), targets);
  out.total.backward();
  const at::Tensor items = out.items.to(torch::kCPU, torch::kDouble);
  for (int i = 0; i < 3; ++i) tloss[i] = (tloss[i] * double(batch) + items[i].item<double>()) / double(batch + 1);
  if (ni - last_opt_step >= accumulate_at(ni)) {
    optimizer_step();
    last_opt_step = ni;
  }
  ++batch;
}

bool Trainer::Run::validate(EpochMetrics& m) {
  torch::NoGradGuard no_grad;
  nn::DetectionModel& net = ema->ema();
  net->eval();
  metrics::Validator validator(model->nc());
  std::array<double, 3> vloss{0, 0, 0};
  std::int64_t batches = 0;
  metrics::NmsOptions nms;
  nms.conf = 0.001;
  nms.iou = cfg.iou;
  nms.max_det = cfg.max_det;
  nms.multi_label = true;
  nms.agnostic = cfg.single_cls;
  val_loader->seek(0, 0);
  while (auto b = val_loader->next()) {
    if (token.stop_requested()) return false;
    const auto feats = net->forward(b->img.to(device).contiguous(memory_format));
    const loss::Targets targets{b->batch_idx.to(device), b->cls.to(device), b->bboxes.to(device)};
    const at::Tensor items = (*criterion)(feats, targets).items.to(torch::kCPU, torch::kDouble);
    for (int i = 0; i < 3; ++i) vloss[i] += items[i].item<double>();
    ++batches;
    std::vector<at::Tensor> preds = metrics::non_max_suppression(net->head()->decode(feats), nms);
    for (auto& p : preds) p = p.to(torch::kCPU);
    std::vector<metrics::ImageInfo> infos;
    for (std::size_t i = 0; i < b->ori_shape.size(); ++i) {
      const auto& rp = b->ratio_pad[i];
      infos.push_back({{b->ori_shape[i].first, b->ori_shape[i].second},
                       metrics::RatioPad{{rp.ratio_h, rp.ratio_w}, {rp.pad_x, rp.pad_y}}});
    }
    validator.update(preds, b->batch_idx, b->cls, b->bboxes, {b->img.size(2), b->img.size(3)}, infos);
  }
  if (token.stop_requested()) return false;  // the loader's wait ended on the stop: not validated
  const metrics::DetMetrics dm = validator.finalize();
  m.precision = dm.mp;
  m.recall = dm.mr;
  m.map50 = dm.map50;
  m.map = dm.map;
  m.fitness = dm.fitness;
  m.val_box_loss = vloss[0] / double(std::max<std::int64_t>(batches, 1));
  m.val_cls_loss = vloss[1] / double(std::max<std::int64_t>(batches, 1));
  m.val_dfl_loss = vloss[2] / double(std::max<std::int64_t>(batches, 1));
  return true;
}

bool Trainer::Run::end_epoch(EpochMetrics& m) {
  m.epoch = epoch + 1;
  m.box_loss = tloss[0];
  m.cls_loss = tloss[1];
  m.dfl_loss = tloss[2];
  m.lr_pg0 = group_lr(*optimizer, 0);
  m.lr_pg1 = group_lr(*optimizer, 1);
  m.lr_pg2 = group_lr(*optimizer, 2);
  if (results_csv.empty()) results_csv = results_csv_header();
  results_csv += results_csv_row(m);
  lc::atomic_write(run_dir / "results.csv", results_csv);
  last_metrics = m;
  char line[256];
  std::snprintf(line, sizeof(line), "epoch %lld/%lld: P %.3f R %.3f mAP50 %.3f mAP50-95 %.3f (losses %.3f %.3f %.3f)",
                static_cast<long long>(epoch + 1), static_cast<long long>(cfg.epochs), m.precision, m.recall,
                m.map50, m.map, m.box_loss, m.cls_loss, m.dfl_loss);
  say(line);
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
  const double elapsed = elapsed_before + std::chrono::duration<double>(Clock::now() - started).count();
  const bool out_of_time = cfg.time > 0 && elapsed >= cfg.time * 3600.0;
  const bool done = finished || patience_out || out_of_time;
  if (cfg.save) {
    checkpoint(true, done, /*force=*/true);
    if (improved) store->save_pinned(snapshot(done), "best");
    if (cfg.save_period > 0 && epoch % cfg.save_period == 0) store->save_pinned(snapshot(done), "epoch" + std::to_string(epoch));
  }
  if (cb.on_epoch_end) cb.on_epoch_end(m);
  if (patience_out) result.reason = "early stopping: no improvement in " + std::to_string(cfg.patience) + " epochs";
  if (out_of_time) result.reason = "time limit of " + exact(cfg.time) + " h reached";
  if (finished) result.reason = "epochs done";
  return !done;
}

TrainerProgress Trainer::Run::progress() const {
  return {epoch, cfg.epochs, batch, nb, step(), tloss[0], tloss[1], tloss[2]};
}

RunResult Trainer::Run::run() {
  find_resume_checkpoint();
  result.run_dir = run_dir;
  log_file.open(run_dir / "train.log", std::ios::app);
  load_data();
  build();
  status = std::make_unique<lc::RunStatus>(
      run_dir / "status.json", std::chrono::milliseconds(static_cast<std::int64_t>(cfg.status_interval * 1000)));
  if (resume_from) restore();
  resume_from.reset();
  lc::atomic_write(run_dir / "args.yaml", cfg.to_yaml());
  deadline = cfg.deadline_at(std::chrono::system_clock::now());
  set_state(lc::RunState::Running);
  if (cb.on_train_start) cb.on_train_start(progress());
  say("training " + std::to_string(cfg.epochs) + " epochs of " + std::to_string(nb) + " batches, " + choice.name +
      " lr " + std::to_string(choice.lr) + ", run folder " + run_dir.string());
  bool going = true;
  while (going && epoch < cfg.epochs) {
    train_loader->seek(static_cast<int>(epoch), batch);
    model->train();
    while (going && batch < nb) {
      if (!(going = poll())) break;
      auto b = train_loader->next();
      if (!b) {
        going = !token.stop_requested() || poll();  // a stop while waiting for data
        break;
      }
      train_batch(*b);
      status->set_progress(step(), epoch);
      if (cb.on_batch_end) cb.on_batch_end(progress());
    }
    if (!going) break;
    EpochMetrics m;
    if (cfg.val || epoch + 1 >= cfg.epochs) {
      if (!validate(m)) {
        going = poll();  // a stop inside validation: the checkpoint below re-runs it on resume
        break;
      }
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
    set_state(lc::RunState::Completed);
  }
  say(std::string(to_string(result.outcome)) + " (" + result.reason + ") at epoch " + std::to_string(epoch) +
      ", step " + std::to_string(step()) + "; checkpoint " + result.last_checkpoint.string());
  return result;
}

Trainer::Trainer(TrainConfig config, TrainerCallbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {}

Trainer::~Trainer() = default;

RunResult Trainer::run(lc::ControlToken& token) {
  lc::CudaGuard guard;
  Run run(config_, callbacks_, token);
  RunResult result;
  try {
    result = run.run();
  } catch (const ConfigError&) {
    throw;
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
    result = run.result;
    result.outcome = RunOutcome::Failed;
    result.reason = e.what();
  }
  if (callbacks_.on_train_end) callbacks_.on_train_end(result);
  return result;
}

fs::path export_safetensors(const fs::path& checkpoint, const fs::path& out) {
  const lc::Checkpoint c = lc::CheckpointStore::load(checkpoint);
  lc::NamedTensors weights;
  for (const auto& [name, t] : c.tensors) {
    if (name.rfind("ema.", 0) == 0) weights.emplace_back(name.substr(4), t);
  }
  if (weights.empty()) throw Error(checkpoint.string() + " holds no EMA weights: is it a yolo_train checkpoint?");
  nn::write_safetensors(out, weights, {{"format", "pt"}});
  return out;
}

}  // namespace yolotrain::engine
