// An epoch's figures by name, in results.csv's column order. Which figures an epoch has is the
// task's to say (Task::epoch_metrics(), src/engine/tasks/); results.csv, results.png, status.json,
// the Prometheus file, TensorBoard and the ranks' exchange read them by name.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "yolotrain/engine/trainer.hpp"

namespace yolotrain::engine {

EpochMetrics EpochMetrics::with_columns(const std::vector<std::string>& names) {
  EpochMetrics m;
  m.figures.reserve(names.size());
  for (const auto& name : names) m.figures.emplace_back(name, 0.0);
  return m;
}

bool EpochMetrics::set(const std::string& name, double value) {
  if (name == "fitness") {
    fitness = value;
    return true;
  }
  for (auto& [figure, v] : figures) {
    if (figure == name) {
      v = value;
      return true;
    }
  }
  return false;
}

std::optional<double> EpochMetrics::get(const std::string& name) const {
  if (name == "fitness") return fitness;
  for (const auto& [figure, v] : figures) {
    if (figure == name) return v;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, double>> TrainerProgress::named() const {
  std::vector<std::pair<std::string, double>> out;
  out.reserve(losses.size() + lr.size());
  for (const auto& [term, value] : losses) out.emplace_back("train/" + term, value);
  for (std::size_t g = 0; g < lr.size(); ++g) out.emplace_back("lr/pg" + std::to_string(g), lr[g]);
  return out;
}

}  // namespace yolotrain::engine
