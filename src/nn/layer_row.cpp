#include "layer_row.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "yolotrain/nn/model_yaml.hpp"

namespace yolotrain::nn::detail {

bool LayerRow::model_has(const std::string& module) const {
  return std::any_of(def_.layers.begin(), def_.layers.end(), [&](const LayerDef& l) { return l.module == module; });
}

Error LayerRow::error(const std::string& what) const { return Error(row_context(def_, layer_) + what); }

bool LayerRow::has(size_t i) const {
  if (i >= layer_.args.size()) return false;
  const YAML::Node& n = layer_.args[i];
  return !(n.IsNull() || (n.IsScalar() && (n.Scalar() == "None" || n.Scalar() == "null")));
}

int64_t LayerRow::integer(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  const YAML::Node& n = layer_.args[i];
  if (n.IsScalar() && n.Scalar() == "nc") return def_.nc;
  try {
    return n.as<int64_t>();
  } catch (const YAML::Exception&) {
    throw bad(i, "an integer");
  }
}

int64_t LayerRow::integer_in(size_t i, int64_t fallback, int64_t lo, int64_t hi) const {
  const int64_t v = integer(i, fallback);
  if (v < lo || v > hi) throw bad(i, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

double LayerRow::real(size_t i, double fallback) const {
  if (!has(i)) return fallback;
  try {
    return layer_.args[i].as<double>();
  } catch (const YAML::Exception&) {
    throw bad(i, "a number");
  }
}

double LayerRow::real_in(size_t i, double fallback, double lo, double hi) const {
  const double v = real(i, fallback);
  if (!(v >= lo && v <= hi)) throw bad(i, "a number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

bool LayerRow::boolean(size_t i, bool fallback) const {
  if (!has(i)) return fallback;
  try {
    return layer_.args[i].as<bool>();
  } catch (const YAML::Exception&) {
    throw bad(i, "True or False");
  }
}

std::string LayerRow::text(size_t i, const std::string& fallback) const {
  return has(i) && layer_.args[i].IsScalar() ? layer_.args[i].Scalar() : fallback;
}

int64_t LayerRow::channels() const {
  if (!has(0)) throw error("args[0] (output channels) is missing");
  const int64_t c2 = integer(0, 0);
  if (c2 < 1 || c2 > 65536) throw bad(0, "a channel count from 1 to 65536");
  // Ultralytics up to 8.3: `if c2 != nc` (a channel count equal to nc stays); 8.4 scales every
  // layer but Classify.
  if (c2 == def_.nc && !def_.ultralytics84) return c2;
  const int64_t out = make_divisible(std::min(static_cast<double>(c2), def_.max_channels) * def_.width, 8);
  if (out > 65536) throw bad(0, "at most 65536 channels once scaled (width " + std::to_string(def_.width) + ")");
  return out;
}

Error LayerRow::bad(size_t i, const std::string& expected) const {
  return error("args[" + std::to_string(i) + "] = " + YAML::Dump(layer_.args[i]) + " should be " + expected);
}

}  // namespace yolotrain::nn::detail
