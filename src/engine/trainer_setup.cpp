// Trainer::Run: its data (a data.yaml or a program's), the model, EMA, optimizer, loss and
// loaders, AutoBatch, frozen layers.
#include <torch/nn/modules/batchnorm.h>

#include "determinism.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn/class_remap.hpp"
#include "trainer_run.hpp"

namespace yolotrain::engine {

void Trainer::Run::load_data() {
  if (given) {  // a program's splits (data::memory_dataset)
    data.train = given->train;
    data.val = given->val;
    data.config.names = data.train.names;
  } else {
    load_data_yaml();
  }
  say("train: " + data.train.report.summary());
  report_problems("train: ", data.train.report);
  say("val: " + data.val.report.summary());
  report_problems("val: ", data.val.report);
  if (cfg.fraction < 1.0) {  // as Ultralytics: the first round(fraction * n) images
    const auto keep = static_cast<std::size_t>(python_round(cfg.fraction * double(data.train.size())));
    if (keep == 0) throw ConfigError("fraction=" + exact_text(cfg.fraction) + " leaves no training image of " +
                                     std::to_string(data.train.size()));
    data.train.records.resize(keep);
    say("fraction=" + std::to_string(cfg.fraction) + ": training on the first " + std::to_string(keep) + " images");
  }
  if (cfg.single_cls) {  // every class becomes class 0, "item"
    merge_classes(data.train);
    merge_classes(data.val);
    data.config.names = {"item"};
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
  if (!fs::exists(yaml)) {
    throw ConfigError("data=" + cfg.data + ": no such file or folder; give a data.yaml (or data=shapes), or for "
                      "classification a folder of class folders (or data=shapes-cls)");
  }
  try {
    data.config = data::load_dataset_config(yaml);
    data.train = data::load_split(data.config, "train");
    data.val = data::load_split(data.config, data.config.has("val") ? "val" : "train");
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {  // a dataset that cannot be read: the data (or data=) must change
    throw ConfigError("data=" + cfg.data + ": " + e.what());
  }
}

namespace {

// The augmentation settings by name: a positional list would shift silently if a field moved.
data::AugmentConfig augment_config(const TrainConfig& cfg) {
  data::AugmentConfig a;
  a.hsv_h = cfg.hsv_h;
  a.hsv_s = cfg.hsv_s;
  a.hsv_v = cfg.hsv_v;
  a.hue_shift = cfg.ultralytics84();
  a.degrees = cfg.degrees;
  a.translate = cfg.translate;
  a.scale = cfg.scale;
  a.shear = cfg.shear;
  a.perspective = cfg.perspective;
  a.flipud = cfg.flipud;
  a.fliplr = cfg.fliplr;
  a.mosaic = cfg.mosaic;
  a.mixup = cfg.mixup;
  a.cutmix = cfg.cutmix;
  a.copy_paste = cfg.copy_paste;
  a.copy_paste_mixup = cfg.copy_paste_mode == "mixup";
  a.erasing = cfg.erasing;
  a.rand_augment = cfg.auto_augment == "randaugment";
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
  if (device.is_cuda() && device.has_index()) lc::cuda_set_current_device(device.index());
  use_cpu_threads(intra_op_threads(cfg.threads, ranks.local_world_size()));
  torch::manual_seed(static_cast<std::uint64_t>(cfg.seed));
  apply_determinism(cfg.deterministic);
  const bool from_weights = io::is_weights_file(cfg.model);
  const std::optional<io::ModelWeights> model_file = from_weights ? read_start_weights(cfg.model) : std::nullopt;
  // Ultralytics 8.4 (engine/model.py:814-831): the model file's network always; its weights unless
  // pretrained=false (then from scratch); pretrained=FILE starts from that file's weights instead.
  std::optional<io::ModelWeights> start = cfg.pretrained == "false" ? std::nullopt : model_file;
  if (cfg.pretrained != "true" && cfg.pretrained != "false") start = read_start_weights(cfg.pretrained);
  // From weights, the architecture is theirs, built by this version's rules as Ultralytics 8.4 does
  // (DetectionModel(weights.yaml, nc=data's nc), then the weights transferred): compat= decides.
  try {
    model = nn::DetectionModel(nn::DetectionModelOptions(from_weights ? model_file->model_yaml : cfg.model)
                                   .nc(data.config.nc())
                                   .names(data.config.names)
                                   .ultralytics(cfg.compat)
                                   .kpt_shape(kpt_shape_of(data.config)));
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {  // a model YAML that cannot be built: the argument must change
    throw ConfigError("model=" + cfg.model + ": " + e.what());
  }
  if (!cfg.task.empty() && cfg.task != model->task()) {  // Ultralytics: the model's task wins
    say("WARNING conflicting 'task=" + cfg.task + "' passed with 'task=" + model->task() + "' model. Ignoring 'task=" +
        cfg.task + "' and updating to 'task=" + model->task() + "' to match model.");
  }
  if (model->task() == "classify" && cfg.imgsz == TrainConfig().imgsz) {  // ClassificationTrainer: 224 when none given
    say("imgsz=224: a classification model's default size (Ultralytics' classification trainer)");
    cfg.imgsz = 224;
  }
  cfg.task = model->task();  // args.yaml says which
  if (cfg.imgsz % model->max_stride() != 0) {  // Ultralytics' check_imgsz(imgsz, stride=gs, floor=gs)
    const std::int64_t rounded = nn::check_imgsz(cfg.imgsz, model->max_stride());
    say("warning: imgsz=" + std::to_string(cfg.imgsz) + " must be a multiple of " +
        std::to_string(model->max_stride()) + ", updating to " + std::to_string(rounded));
    cfg.imgsz = rounded;
  }
  if (start && !plan.resume_from) transfer_start_weights(*start);  // a resumed run: the checkpoint's instead
  freeze_layers();
  model->to(device);
  amp = amp_mode(cfg.amp, device);
  scaler = GradScaler(amp == AmpMode::Fp16Scaled);
  if (cfg.autobatch > 0) resolve_autobatch();
  // On CUDA channels_last (NHWC: cuDNN's tensor-core kernels); batches follow it. On the CPU NCHW, as
  // Ultralytics trains there: oneDNN's NHWC backward is faster but its weight gradients are ~1e-3 off
  // float64's where NCHW's are 2e-5 (docs/performance.md "Learning as Ultralytics 8.4"), which moves a
  // run away from Ultralytics' step by step; channels_last=true takes it anyway, saying so.
  const bool nhwc = cfg.channels_last == "true" || (cfg.channels_last.empty() && !device.is_cpu());
  memory_format = nhwc ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::Contiguous;
  if (cfg.channels_last == "true" && device.is_cpu()) {
    say("channels_last=true on the CPU: NHWC convolutions, faster here, their gradients ~1e-3 less precise than "
        "NCHW's (Ultralytics ignores channels_last on the CPU)");
  }
  if (cfg.compile != "false") {
    say("compile=" + cfg.compile + ": libtorch has no torch.compile; the step runs eagerly" +
        (device.is_cuda() ? " (cuda_graph= replays it as a CUDA graph)" : ""));
  }
  nn::set_memory_format(*model, memory_format);
  model->train();
  ema = std::make_unique<ModelEMA>(model);
  choice = choose_optimizer(cfg, static_cast<std::int64_t>(data.train.size()), data.config.nc());
  if (plan.resume_from) {  // the stored state, read once; its choice: extending epochs must not flip optimizer=auto
    state = stored_state();
    choice.name = state.optimizer;
    choice.lr = state.lr;
    choice.momentum = state.momentum;
    choice.warmup_bias_lr = state.warmup_bias_lr;
  }
  optimizer = build_optimizer(model, choice);
  set_class_weights();
  task = make_task(model, cfg, data.config);
  for (const std::string& warning : task->setup_warnings()) say(warning);
  if (!plan.resume_from) state.loss_means.assign(task->loss_terms().size(), 0.0);
  build_loaders();
  const std::string model_id = model->yaml_path().filename().string() + ":" + model->scale() + ":nc" +
                               std::to_string(model->nc());
  store = std::make_unique<lc::CheckpointStore>(
      lc::CheckpointStoreOptions{plan.run_dir / "weights", static_cast<int>(cfg.keep_last), model_id, "last", {}});
  if (plan.remote) remote::mirror_checkpoints(*store, plan.remote->mirror());
  setup_cuda_graph();
}

// cls_pw: Ultralytics 8.4's DetectionTrainer.set_class_weights, after the loaders are made, before
// the loss is: weights from the training split's boxes per class, set on the model, whose loss reads
// them (recomputed as Ultralytics does at a resume). Its ClassificationTrainer has none.
void Trainer::Run::set_class_weights() {
  if (cfg.cls_pw == 0) return;
  if (model->classifier()) {
    say("cls_pw=" + exact_text(cfg.cls_pw) + ": classification has no class weights (nor has Ultralytics' "
        "ClassificationTrainer): every class weighs the same");
    return;
  }
  const at::Tensor w = loss::class_weights_for(data.train.boxes_per_class(), cfg.cls_pw);
  if (!w.defined()) return;  // nothing counted: every class weighs 1
  model->set_class_weights(w.to(device));
  std::string text;
  char buf[32];
  for (std::int64_t c = 0; c < w.numel(); ++c) {
    std::snprintf(buf, sizeof(buf), "%s%.3f", c == 0 ? "" : " ", w[c].item<double>());
    text += buf;
  }
  say("Class weights: [" + text + "]");
}

// cuda_graph=: the steps replayed as CUDA graphs where their shapes are static (graphed_step.hpp).
// On CUDA the run says which, and why not where auto found a reason; true with a reason: exit 2.
void Trainer::Run::setup_cuda_graph() {
  GraphFacts facts;
  facts.arg = cfg.cuda_graph;
  facts.cuda = device.is_cuda();
  facts.built_with_cuda = YOLOTRAIN_WITH_CUDA;
  facts.task_reason = task->graph_blocker();
  facts.multi_scale = cfg.multi_scale > 0;
  const GraphPlan graph = plan_cuda_graph(facts);
  if (graph.on) {
    graphed = std::make_unique<GraphedStep>(model->parameters());
    say("cuda_graph: each batch shape's forward, loss and backward is captured after 2 steps and replayed");
  } else if (device.is_cuda() && cfg.cuda_graph == "auto") {
    say("cuda_graph: off (" + graph.reason + "); the steps run eagerly");
  }
}

// The training loader (this rank's share of each batch) and the validation loader (rank 0
// validates the whole set).
void Trainer::Run::build_loaders() {
  if (cfg.batch % ranks.world_size() != 0) {
    throw ConfigError("batch=" + std::to_string(cfg.batch) + " is the total over " +
                      std::to_string(ranks.world_size()) + " ranks and must divide evenly; use a multiple of " +
                      std::to_string(ranks.world_size()));
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
  train_opts.partners_from_all = train_opts.cache_ram && cfg.ultralytics84();  // 8.3: the buffer always
  train_opts.rect = cfg.rect;
  train_opts.pin_memory = device.is_cuda();  // as Ultralytics: a non-blocking copy of each batch
  // A stop ends a wait for data at once; with several ranks the stop waits for the step's
  // agreement instead (a rank leaving the step alone would desynchronise the collectives).
  train_opts.token = ranks.active() ? nullptr : &token;
  task->configure_loaders(train_opts, data.train, data.val);  // segmentation: the masks
  data.train_loader = std::make_unique<data::Loader>(data.train, train_opts);
  data::LoaderOptions val_opts = train_opts;
  val_opts.batch = train_opts.batch * task->val_batch_factor();
  val_opts.rank = 0;  // rank 0 validates the whole set
  val_opts.world_size = 1;
  val_opts.token = &token;
  val_opts.augment = false;
  val_opts.shuffle = false;
  val_opts.rect = true;
  data.val_loader = std::make_unique<data::Loader>(data.val, val_opts);
  nb = data.train_loader->batches_per_epoch();
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

// Ultralytics 8.4's DetectionModel.load after set_model_names_for_load: the head's class rows by
// name first (cls_remap; not under compat=8.3, which had none), then every tensor whose name and
// shape agree; "Transferred" counts both.
void Trainer::Run::transfer_start_weights(io::ModelWeights& start) {
  nn::ClassRemap remap;
  if (cfg.cls_remap && cfg.ultralytics84()) {
    remap = nn::remap_class_rows(*model, start.tensors, start.names, data.config.names);
  }
  if (remap.tensors > 0) {
    say("Remapped " + std::to_string(remap.matched) + "/" + std::to_string(remap.nc) +
        " cls head rows from pretrained weights by class name");
  }
  const std::size_t n = nn::transfer_weights(*model, start.tensors) + remap.tensors;
  say("Transferred " + std::to_string(n) + "/" + std::to_string(nn::state_dict(*model).size()) +
      " items from pretrained weights (" + start.description + ")");
}

// As Ultralytics: the DFL conv always, plus `freeze` (the first N layers, or listed indices).
void Trainer::Run::freeze_layers() {
  frozen = {".dfl"};
  if (!cfg.freeze.empty()) {
    std::vector<std::int64_t> layers;
    if (cfg.freeze.find(',') == std::string::npos) {
      for (std::int64_t i = 0; i < std::stoll(cfg.freeze); ++i) layers.push_back(i);
    } else {
      std::stringstream in(cfg.freeze);
      for (std::string item; std::getline(in, item, ',');) layers.push_back(std::stoll(item));
    }
    for (auto i : layers) frozen.push_back("model." + std::to_string(i) + ".");
  }
  std::int64_t count = 0;
  for (auto& p : model->named_parameters()) {
    bool freeze = false;
    for (const auto& part : frozen) freeze = freeze || p.key().find(part) != std::string::npos;
    p.value().requires_grad_(!freeze);
    count += freeze;
  }
  if (!cfg.freeze.empty()) say("freeze=" + cfg.freeze + ": " + std::to_string(count) + " parameter tensors frozen");
}

// 8.4's BaseTrainer._model_train (engine/trainer.py:701-707), every epoch: the frozen layers'
// BatchNorm in eval, so their running statistics stay those they started with; 8.3 trained them.
void Trainer::Run::train_mode() {
  model->train();
  if (!cfg.ultralytics84()) return;
  for (const auto& item : model->named_modules("", /*include_self=*/false)) {
    if (item.value()->as<torch::nn::BatchNorm2dImpl>() == nullptr) continue;
    for (const auto& part : frozen) {
      if (item.key().find(part) != std::string::npos) item.value()->eval();
    }
  }
}

}  // namespace yolotrain::engine
