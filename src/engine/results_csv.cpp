#include "results_csv.hpp"

#include <cstdio>
#include <sstream>
#include <vector>

#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/plots/plot_results.hpp"

namespace yolotrain::engine {
namespace {

std::string g6(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string joined(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) line += (i == 0 ? "" : ",") + cells[i];
  return line + "\n";
}

}  // namespace

// Ultralytics' save_metrics: ("%s," * n % ("epoch", "time", *keys)).rstrip(",") and
// ("%.6g," * n % (epoch + 1, t, *vals)).rstrip(",").
std::string results_csv_header(const EpochMetrics& m) {
  std::vector<std::string> cells{"epoch", "time"};
  for (const auto& [name, value] : m.named()) cells.push_back(name);
  return joined(cells);
}

std::string results_csv_row(const EpochMetrics& m) {
  std::vector<std::string> cells{g6(double(m.epoch)), g6(m.time)};
  for (const auto& [name, value] : m.named()) cells.push_back(g6(value));
  return joined(cells);
}

std::string results_csv_with_time(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return text;
  std::vector<std::string> header = plots::results_csv_cells(line);
  if (header.size() < 2 || header[0] != "epoch" || header[1] == "time") return text;
  header.insert(header.begin() + 1, "time");
  std::string out = joined(header);
  while (std::getline(in, line)) {
    std::vector<std::string> row = plots::results_csv_cells(line);
    if (row.empty()) continue;
    row.insert(row.begin() + 1, "");
    out += joined(row);
  }
  return out;
}

namespace detail {

void ResultsCsv::add(const EpochMetrics& m, plots::PlotWriter* plots) {
  if (text_.empty()) text_ = results_csv_header(m);
  text_ += results_csv_row(m);
  if (run_dir_.empty()) return;
  lifecycle::atomic_write(run_dir_ / "results.csv", text_);
  if (plots) plots->submit(run_dir_ / "results.png", [csv = text_] { return plots::plot_results(csv); });
}

}  // namespace detail
}  // namespace yolotrain::engine
