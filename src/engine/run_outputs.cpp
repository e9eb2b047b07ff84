#include "run_outputs.hpp"

#include <cstdio>
#include <utility>

#include "yolotrain/lifecycle/atomic_file.hpp"
#include "yolotrain/plots/plot_results.hpp"

namespace yolotrain::engine {

// Ultralytics' save_metrics: "%23s," per key, "%23.5g," per value; the columns are `epoch` then
// EpochMetrics::named().
std::string results_csv_header() {
  std::string line;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%23s,", "epoch");
  line += buf;
  for (const auto& [name, value] : EpochMetrics().named()) {
    std::snprintf(buf, sizeof(buf), "%23s,", name.c_str());
    line += buf;
  }
  line.pop_back();
  return line + "\n";
}

std::string results_csv_row(const EpochMetrics& m) {
  std::string line;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%23.5g,", double(m.epoch));
  line += buf;
  for (const auto& [name, value] : m.named()) {
    std::snprintf(buf, sizeof(buf), "%23.5g,", value);
    line += buf;
  }
  line.pop_back();
  return line + "\n";
}

namespace detail {

void ResultsCsv::add(const EpochMetrics& m, plots::PlotWriter* plots) {
  if (text_.empty()) text_ = results_csv_header();
  text_ += results_csv_row(m);
  lifecycle::atomic_write(run_dir_ / "results.csv", text_);
  if (plots) plots->submit(run_dir_ / "results.png", [csv = text_] { return plots::plot_results(csv); });
}

CallbackList<const EpochMetrics&> epoch_outputs(const EpochOutputs& to,
                                                const CallbackList<const EpochMetrics&>& program) {
  CallbackList<const EpochMetrics&> out;
  out.add([to](const EpochMetrics& m) { to.results->add(m, to.plots); });
  out.add([to](const EpochMetrics& m) {
    char line[256];
    std::snprintf(line, sizeof(line), "epoch %lld/%lld: P %.3f R %.3f mAP50 %.3f mAP50-95 %.3f (losses %.3f %.3f %.3f)",
                  static_cast<long long>(m.epoch), static_cast<long long>(to.epochs), m.precision, m.recall, m.map50,
                  m.map, m.box_loss, m.cls_loss, m.dfl_loss);
    to.say(line);
  });
  out.add([to](const EpochMetrics& m) {
    for (const auto& [name, value] : {std::pair<const char*, double>{"precision", m.precision}, {"recall", m.recall},
                                      {"map50", m.map50}, {"map50_95", m.map}, {"fitness", m.fitness}}) {
      to.status->set_metric(name, value);
    }
  });
  out.append(program);
  return out;
}

}  // namespace detail
}  // namespace yolotrain::engine
