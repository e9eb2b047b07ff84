#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/lifecycle/control/signal_binding.hpp"

#include "yolotrain/error.hpp"

namespace yolotrain::engine {

/// yolotrain::ConfigError (error.hpp), by the name it had when only training threw it.
using ConfigError = yolotrain::ConfigError;

/// Every training argument, with Ultralytics' names and defaults (so `yolo train` users know them),
/// plus yolotrain's lifecycle arguments. Load it with from_args() (`cfg=file.yaml` and `key=value`
/// overrides); every value is checked when set, with a message naming the key, the bad value and
/// what is allowed. Unknown keys are errors that suggest the closest valid ones.
struct TrainConfig {
  // --- what to train on
  /// "detect", "segment", "pose", "classify" or "obb"; empty: the model's (as Ultralytics infers it
  /// from the model). Setting it to segment (pose, classify, obb) turns the defaults into that task's:
  /// model yolov8n.yaml -> yolov8n-seg.yaml (-pose, -cls, -obb), data shapes -> shapes-seg
  /// (shapes-pose, shapes-cls, shapes-obb), project runs/detect -> runs/segment (runs/pose,
  /// runs/classify, runs/obb), and for classify imgsz 640 -> 224; values given stay. A model of another task wins, with
  /// a warning (Ultralytics' "conflicting 'task=...'").
  std::string task;
  std::string model = "yolov8n.yaml";  ///< model YAML (name or path), or a checkpoint / safetensors
  std::string data = "shapes";         ///< data.yaml, or "shapes" for the built-in synthetic set
  std::int64_t epochs = 100;
  double time = 0;                 ///< hours; 0: no time limit (Ultralytics: None)
  std::int64_t patience = 100;
  std::int64_t batch = 16;         ///< images per batch (over all ranks); set by AutoBatch when `autobatch` > 0
  /// batch=-1 (0.6) or batch=0.xx: AutoBatch fills that fraction of the GPU's memory and sets
  /// `batch` at the start of training (16 on the CPU, as Ultralytics); 0: `batch` as given.
  double autobatch = 0;
  std::int64_t imgsz = 640;        ///< rounded up to a multiple of 32
  bool save = true;
  std::int64_t save_period = -1;   ///< epochs between epoch<N> checkpoints; -1: off
  std::string cache = "false";     ///< false | ram
  std::string device = "";         ///< "" (a GPU when usable, else cpu), cpu, cuda, cuda:N, N
  std::int64_t workers = 8;        ///< data loader threads
  std::string project = "runs/detect";
  std::string name = "train";
  bool exist_ok = false;
  std::string pretrained = "true";  ///< true | false | a weights file
  /// Fine-tuning: the pretrained head's class rows moved to the data's classes by name (8.4).
  bool cls_remap = true;
  std::string optimizer = "auto";   ///< auto | SGD | Adam | AdamW
  std::int64_t seed = 0;
  bool deterministic = true;
  /// Whose construction a model built from YAML follows: "8.4" (Ultralytics 8.4, the default) or
  /// "8.3" (8.0 to 8.3; nn::DetectionModelOptions::ultralytics). A run resumed from a checkpoint
  /// written before this argument existed keeps 8.3, as it was built.
  std::string compat = "8.4";
  /// Whether the run follows Ultralytics 8.4 where 8.4 changed every model (compat=8.4): STAL,
  /// MuSGD for optimizer=auto, 8.4's validation rules and fitness.
  bool ultralytics84() const { return compat != "8.3"; }
  bool single_cls = false;
  bool rect = false;
  bool cos_lr = false;
  std::int64_t close_mosaic = 10;
  std::string resume = "false";     ///< false | true | a checkpoint path
  std::string amp = "true";         ///< true (fp16 + scaler on CUDA, off on CPU) | false | bf16
  double fraction = 1.0;
  std::string freeze = "";          ///< "" | N (first N layers) | comma-separated layer indices
  /// Each batch's size drawn from [max(stride, imgsz (1 - f)), imgsz (1 + f) + stride) (8.4's
  /// fraction f; 0: off; `true` reads as 1.0, as 8.4 reads it); compat=8.3: any f > 0 is 8.3's
  /// [imgsz / 2, 1.5 imgsz + stride).
  double multi_scale = 0.0;
  /// The CPU runs the step CUDA runs (the assigner's dense tensors instead of its sparse pairs read
  /// on the host): what the step profile counts (docs/performance.md "The step profile"). CUDA
  /// always runs it; on the CPU the sparse path is faster.
  bool device_step = false;
  /// CUDA graphs for the training steps: auto (where the shapes are static: detection and
  /// segmentation, not multi_scale), true (the same, and an error where they cannot be), false.
  std::string cuda_graph = "auto";
  bool val = true;
  double iou = 0.7;
  std::int64_t max_det = 300;
  /// `val` of an end-to-end head (YOLO26): its one-to-one top-k (true), or the one-to-many branch
  /// with NMS (false; Ultralytics' end2end=False). Training and other heads ignore it.
  bool end2end = true;
  /// Segmentation: one index mask per image, larger instances first (true), or one mask per
  /// instance (Ultralytics' overlap_mask).
  bool overlap_mask = true;
  /// Segmentation: masks at 1 / mask_ratio of the input size (Ultralytics' mask_ratio).
  std::int64_t mask_ratio = 4;
  bool plots = true;
  bool tensorboard = false;         ///< events.out.tfevents.* in the run folder (TensorBoardLogger)
  bool verbose = true;              ///< progress line per batch, per-class table at the end
  // --- hyper-parameters
  double lr0 = 0.01, lrf = 0.01, momentum = 0.937, weight_decay = 0.0005;
  double warmup_epochs = 3.0, warmup_momentum = 0.8, warmup_bias_lr = 0.1;
  double box = 7.5, cls = 0.5, dfl = 1.5;
  double pose = 12.0, kobj = 1.0, rle = 1.0;  ///< pose models' loss gains (Ultralytics 8.4's defaults)
  double angle = 1.0;  ///< OBB models' angle loss gain (8.4; compat=8.3 has no angle term)
  std::int64_t nbs = 64;
  double hsv_h = 0.015, hsv_s = 0.7, hsv_v = 0.4;
  double degrees = 0.0, translate = 0.1, scale = 0.5, shear = 0.0, perspective = 0.0;
  double flipud = 0.0, fliplr = 0.5, mosaic = 1.0, mixup = 0.0, copy_paste = 0.0;
  /// copy_paste's source (Ultralytics' copy_paste_mode): "flip", the sample mirrored; "mixup",
  /// another sample of the dataset put through mosaic and random_perspective.
  std::string copy_paste_mode = "flip";
  /// Classification: random erasing's probability (Ultralytics' `erasing`).
  double erasing = 0.4;
  /// Classification: Ultralytics' auto_augment policy: "randaugment" (its default: torchvision's
  /// RandAugment in place of the colour jitter) or empty (None: the colour jitter); augmix and
  /// autoaugment are refused (docs/engine.md "Classification").
  std::string auto_augment = "randaugment";
  /// Classification: the Classify head's Dropout probability (Ultralytics' `dropout`).
  double dropout = 0.0;
  // --- Ultralytics 8.4's arguments with no libtorch meaning or not here: accepted and said, or
  // refused naming why (TrainConfig::set), rather than "not a valid argument".
  std::string compile = "false";    ///< torch.compile's mode: no libtorch equivalent, the step runs eagerly
  /// The layout of the activations while training: "" (NHWC on CUDA, NCHW on the CPU as Ultralytics),
  /// true (NHWC, also on the CPU: faster there, its gradients less precise), false (NCHW everywhere).
  std::string channels_last = "";
  std::string augmentations = "";   ///< Albumentations transforms (Python objects): refused when set
  std::string distill_model = "";   ///< a teacher for knowledge distillation: refused when set
  double cutmix = 0.0;              ///< 8.4's CutMix probability (data::cutmix)
  double cls_pw = 0.0;              ///< 8.4's class-weight power (detection tasks): 0 none, 1 inverse frequency
  // --- yolotrain's lifecycle arguments
  double save_interval = 300;        ///< seconds between time-based checkpoints; 0: off
  std::int64_t keep_last = 2;        ///< rotating checkpoints kept
  std::string pause_release = "cache";  ///< cache | offload | exit
  double status_interval = 5;        ///< seconds between status.json progress writes
  std::string metrics_file = "";     ///< Prometheus textfile path; "": off
  std::string remote = "";           ///< "" | s3://BUCKET/PREFIX: the run folder mirrored there | off (docs/remote.md)
  double remote_timeout = 20;        ///< seconds a stop waits for the final upload
  std::string control = "";             ///< "" | HOST:PORT: the HTTP control endpoint (docs/engine.md "Control")
  std::string control_token_file = "";  ///< the endpoint's bearer token, in a file; required off loopback
  bool control_per_rank = false;        ///< torchrun: every rank listens (PORT + LOCAL_RANK), not only rank 0
  std::string metrics_push = "";        ///< "" | http://HOST:PORT of a Prometheus Pushgateway
  double metrics_push_interval = 30;    ///< seconds between pushes (and one at each epoch end)
  std::string metrics_push_job = "yolotrain";  ///< the pushed group's job label (instance: the run's name)
  std::string preemption = "off";    ///< off | auto | aws | gcp | azure: the cloud's reclaim notices read (engine.md)
  double preemption_interval = 5;    ///< seconds between two reads of the metadata server
  std::string deadline = "";         ///< "" | duration (90m, 2h30m, 3600s) | clock time HH:MM | YYYY-MM-DDTHH:MM[:SS]
  std::int64_t threads = 0;          ///< intra-op threads; 0: one per core (per rank: cores / ranks per machine)
  double dist_timeout = 1800;        ///< seconds a collective may wait for the other ranks
  std::string signal_stop = "SIGINT,SIGTERM";
  std::string signal_pause = "SIGUSR1";
  std::string signal_resume = "SIGUSR2,SIGCONT";
  std::string signal_checkpoint = "SIGHUP";
  std::string signal_suspend = "SIGTSTP";

  /// Sets one argument from its text (as on a command line). Throws yolotrain::Error naming the
  /// key and what is allowed, or suggesting valid keys for an unknown one.
  void set(const std::string& key, const std::string& value);
  /// The argument's value as text (as args.yaml writes it).
  std::string get(const std::string& key) const;
  /// Sets every `key: value` of a YAML file (Ultralytics' args.yaml or a cfg file).
  void load_yaml(const std::string& path);
  /// load_yaml() of YAML text; `source` names it in messages.
  void load_yaml_text(const std::string& yaml, const std::string& source);
  /// All arguments as YAML, in the documented order (what args.yaml holds).
  std::string to_yaml() const;
  /// Checks what involves several arguments; throws yolotrain::Error.
  void validate() const;
  /// control=, control_token_file= (the file read, the token not kept), metrics_push=; throws ConfigError.
  void validate_control() const;

  /// `cfg=file.yaml` first (if given), then every `key=value` in order, then validate().
  static TrainConfig from_args(const std::vector<std::string>& args);
  /// Every argument: name, default (as text) and meaning, in order (for --help).
  struct ArgInfo {
    std::string name, default_value, help;
  };
  static std::vector<ArgInfo> describe();

  /// The signal mapping these arguments ask for.
  lifecycle::SignalMapping signal_mapping() const;
  /// The deadline as a time point, if one is set; `now` anchors durations. Throws for bad text.
  std::optional<std::chrono::system_clock::time_point> deadline_at(
      std::chrono::system_clock::time_point now) const;

 private:
  void set_batch(const std::string& value);
  void use_task_defaults();
};

/// The valid keys closest to `key` (edit distance), best first, at most `n`.
std::vector<std::string> closest_keys(const std::string& key, std::size_t n = 3);

}  // namespace yolotrain::engine
