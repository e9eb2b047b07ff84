// An epoch's figures by name: Ultralytics' metric keys (DetectionTrainer.label_loss_items with
// prefix "train" / "val", DetMetrics.keys, "lr/pg0-2"), in results.csv's column order. Adding a
// figure = a field in EpochMetrics and its row here; results.csv, results.png, status.json, the
// Prometheus file, TensorBoard and the ranks' exchange read it.
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "yolotrain/engine/trainer.hpp"

namespace yolotrain::engine {
namespace {

using Field = std::pair<const char*, double EpochMetrics::*>;

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {"train/box_loss", &EpochMetrics::box_loss},     {"train/cls_loss", &EpochMetrics::cls_loss},
      {"train/dfl_loss", &EpochMetrics::dfl_loss},     {"metrics/precision(B)", &EpochMetrics::precision},
      {"metrics/recall(B)", &EpochMetrics::recall},    {"metrics/mAP50(B)", &EpochMetrics::map50},
      {"metrics/mAP50-95(B)", &EpochMetrics::map},     {"val/box_loss", &EpochMetrics::val_box_loss},
      {"val/cls_loss", &EpochMetrics::val_cls_loss},   {"val/dfl_loss", &EpochMetrics::val_dfl_loss},
      {"lr/pg0", &EpochMetrics::lr_pg0},               {"lr/pg1", &EpochMetrics::lr_pg1},
      {"lr/pg2", &EpochMetrics::lr_pg2}};
  return table;
}

// The table's name for the figure called `name` when the distance term is called `distance`.
std::string table_name(const std::string& name, const std::string& distance) {
  for (const char* prefix : {"train/", "val/"}) {
    if (name == prefix + distance) return prefix + std::string("dfl_loss");
  }
  return name;
}

std::string shown_name(const char* name, const std::string& distance) {
  const std::string n = name;
  for (const char* prefix : {"train/", "val/"}) {
    if (n == prefix + std::string("dfl_loss")) return prefix + distance;
  }
  return n;
}

}  // namespace

std::vector<std::pair<std::string, double>> EpochMetrics::named() const {
  std::vector<std::pair<std::string, double>> out;
  out.reserve(fields().size());
  for (const auto& [name, member] : fields()) out.emplace_back(shown_name(name, distance_loss), this->*member);
  return out;
}

std::vector<std::pair<std::string, double>> TrainerProgress::named() const {
  EpochMetrics m;
  m.box_loss = box_loss;
  m.cls_loss = cls_loss;
  m.dfl_loss = dfl_loss;
  m.distance_loss = distance_loss;
  m.lr_pg0 = lr[0];
  m.lr_pg1 = lr[1];
  m.lr_pg2 = lr[2];
  std::vector<std::pair<std::string, double>> out;
  for (auto& [name, value] : m.named()) {
    if (name.rfind("train/", 0) == 0 || name.rfind("lr/", 0) == 0) out.emplace_back(std::move(name), value);
  }
  return out;
}

bool TrainerProgress::set(const std::string& given, double value) {
  const std::string name = table_name(given, distance_loss);
  for (const auto& [field, member] : std::initializer_list<std::pair<const char*, double TrainerProgress::*>>{
           {"train/box_loss", &TrainerProgress::box_loss},
           {"train/cls_loss", &TrainerProgress::cls_loss},
           {"train/dfl_loss", &TrainerProgress::dfl_loss}}) {
    if (name == field) {
      this->*member = value;
      return true;
    }
  }
  return false;
}

bool EpochMetrics::set(const std::string& given, double value) {
  const std::string name = table_name(given, distance_loss);
  if (name == "fitness") {
    fitness = value;
    return true;
  }
  for (const auto& [field, member] : fields()) {
    if (name == field) {
      this->*member = value;
      return true;
    }
  }
  return false;
}

}  // namespace yolotrain::engine
