#pragma once
// results.csv as Ultralytics (8.3.9 and later, 8.4.117 among them) writes it: `epoch,time,` and the
// epoch's figures by name, "%.6g" each, nothing padded (engine/trainer.py save_metrics). Its text
// travels in the checkpoints, so a resumed run continues the same file.
#include <filesystem>
#include <string>

#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/plots/plot_writer.hpp"

namespace yolotrain::engine {

/// results.csv's header line: `epoch`, `time` and `m`'s names.
std::string results_csv_header(const EpochMetrics& m);
/// One results.csv row for `m`: its epoch, its training seconds and its figures, each "%.6g".
std::string results_csv_row(const EpochMetrics& m);
/// `text` in the current format: a results.csv yolotrain wrote before it had the `time` column
/// (every cell right-aligned in 23 characters, Ultralytics 8.0's layout) gets the column, empty in
/// those rows (their time was not kept), and loses the padding; any other text is returned as it is.
std::string results_csv_with_time(const std::string& text);

namespace detail {

/// results.csv of a run folder: a row per epoch, rewritten atomically, results.png drawn from it
/// (when `plots` is given). A text from an older checkpoint is brought to the current format first
/// (results_csv_with_time). Without a folder it keeps the text and writes nothing.
class ResultsCsv {
 public:
  explicit ResultsCsv(std::filesystem::path run_dir = {}, std::string text = {})
      : run_dir_(std::move(run_dir)), text_(results_csv_with_time(text)) {}
  const std::string& text() const { return text_; }
  /// Appends `m`'s row, writes results.csv and queues results.png.
  void add(const EpochMetrics& m, plots::PlotWriter* plots);

 private:
  std::filesystem::path run_dir_;
  std::string text_;
};

}  // namespace detail
}  // namespace yolotrain::engine
