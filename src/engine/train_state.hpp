#pragma once
// A training run's state beyond its tensors: what a checkpoint must carry for the resumed run to
// continue exactly where the interrupted one stopped. Written and read through one table of fields
// (train_state.cpp), as EpochMetrics names its figures; a field a checkpoint lacks, one it holds
// that this build does not know, or a value that does not parse is an error naming the field.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace yolotrain::engine {

struct TrainState {
  // Position: epoch (0-based) and batch inside it; samples is the same position in global
  // samples (any number of ranks continues it); -1 where the checkpoint predates it.
  std::int64_t epoch = 0, batch = 0, samples = -1, world_size = 1;
  std::int64_t last_opt_step = -1;  ///< the step of the last optimizer step
  std::int64_t ema_updates = 0;
  double best_fitness = -1;      ///< best.pt's: the latest epoch of the highest fitness (ties move it)
  std::int64_t best_epoch = -1;
  /// EarlyStopping's best (Ultralytics keeps it apart): 8.4 moves it on a higher fitness or while it is
  /// 0, 8.3 on a higher or equal one; patience counts the epochs since stopper_epoch.
  double stopper_fitness = 0;
  std::int64_t stopper_epoch = -1;
  std::string optimizer;  ///< SGD, Adam or AdamW, as chosen when the run started
  double lr = 0, momentum = 0, warmup_bias_lr = 0;
  double scaler_scale = 65536.0;  ///< the AMP gradient scaler
  std::int64_t scaler_growth_tracker = 0;
  double elapsed_s = 0;      ///< training time so far, over every resume
  std::string results_csv;   ///< results.csv's text: the resumed run continues it
  bool completed = false;
  std::string names;         ///< the class names (io::encode_names), read by model_weights too
  std::string kpt_shape;     ///< a pose model's "n,dims" (empty otherwise), read by model_weights too
  /// The running means of the loss terms this epoch, in the loss's order (the checkpoint's
  /// state.tloss tensor).
  std::vector<double> loss_means;
  /// State a loss or task adds, each key "task.<name>" in the checkpoint; a task reads its own.
  std::map<std::string, std::string> task;

  /// This epoch's fitness noted as Ultralytics does: best.pt's best moves on a higher or equal one
  /// (true: save best.pt; engine/trainer.py:766 saves it when best_fitness == fitness); EarlyStopping's
  /// on a higher one or while it is 0 (8.4, utils/torch_utils.py:1019), on a higher or equal one (8.3).
  bool note_fitness(double fitness, bool ultralytics84);

  /// The checkpoint's extra fields (meta.extra) for this state; epoch travels as meta.epoch and
  /// loss_means as loss_means_tensor().
  std::map<std::string, std::string> to_extra() const;
  at::Tensor loss_means_tensor() const;
  /// The state a checkpoint carried. Throws ConfigError naming the checkpoint `source` and each
  /// missing, unknown or unreadable field.
  static TrainState from_checkpoint(const std::map<std::string, std::string>& extra, std::int64_t epoch,
                                    const at::Tensor& loss_means, const std::string& source);
};

/// A double as hex float text: it reads back bit for bit.
std::string exact_text(double v);

}  // namespace yolotrain::engine
