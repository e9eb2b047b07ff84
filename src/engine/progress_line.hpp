#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace yolotrain::engine {

/// What one progress line shows.
struct ProgressFigures {
  std::int64_t epoch = 0;      ///< 0-based
  std::int64_t epochs = 0;
  double gpu_mem_gb = 0;       ///< CUDA memory reserved, GB (0 on the CPU)
  std::vector<double> losses;  ///< the running losses, in progress_header()'s order
  std::int64_t instances = 0;  ///< labelled boxes in the last batch
  std::int64_t size = 0;       ///< the last batch's image width
  std::int64_t batch = 0;      ///< batches done in this epoch
  std::int64_t batches = 0;    ///< batches per epoch
  double elapsed_s = 0;        ///< seconds since the epoch's first batch of this process
  std::int64_t timed_batches = 0;  ///< batches trained in elapsed_s (for it/s and the ETA)
};

/// Ultralytics' column header: "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"
/// with the loss terms `terms` (detection: box_loss, cls_loss, dfl_loss or l1_loss; segmentation:
/// box_loss, seg_loss, cls_loss, dfl_loss, sem_loss).
std::string progress_header(const std::vector<std::string>& terms);

/// Ultralytics' training progress line: the columns of progress_header() (`%11s` / `%11.4g`)
/// followed by tqdm's bar, " 46%|████▌     | 6/13 [00:04<00:05,  1.41it/s]".
std::string progress_line(const ProgressFigures& f);

/// "mm:ss" or "h:mm:ss", as tqdm prints durations.
std::string format_duration(double seconds);

}  // namespace yolotrain::engine
