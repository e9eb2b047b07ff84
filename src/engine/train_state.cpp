// TrainState's one table of fields: the checkpoint key, the member, and for fields added after
// the first checkpoints (2026-11-30, 3e066c1) what their absence means. Adding state = a member in
// TrainState and its row here (a loss's or task's own state goes in TrainState::task instead).
#include "train_state.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "yolotrain/error.hpp"

namespace yolotrain::engine {
namespace {

using StateMember = std::variant<std::int64_t TrainState::*, double TrainState::*, std::string TrainState::*,
                            bool TrainState::*>;

struct StateField {
  const char* key;
  StateMember member;
  const char* absent = nullptr;  // the value when a checkpoint predates the field; null: always written
};

const std::vector<StateField>& state_fields() {
  static const std::vector<StateField> table = {
      {"batch", &TrainState::batch},
      {"samples", &TrainState::samples, "-1"},      // 7319826: ranks
      {"world_size", &TrainState::world_size, "1"},  // 7319826: ranks
      {"last_opt_step", &TrainState::last_opt_step},
      {"ema_updates", &TrainState::ema_updates},
      {"best_fitness", &TrainState::best_fitness},
      {"best_epoch", &TrainState::best_epoch},
      {"stopper_fitness", &TrainState::stopper_fitness, "0x0p+0"},  // issue 70: EarlyStopping's own best
      {"stopper_epoch", &TrainState::stopper_epoch, "-1"},          // -1: best_epoch's (from_checkpoint)
      {"optimizer", &TrainState::optimizer},
      {"lr", &TrainState::lr},
      {"momentum", &TrainState::momentum},
      {"warmup_bias_lr", &TrainState::warmup_bias_lr},
      {"scaler_scale", &TrainState::scaler_scale, "0x1p+16"},         // 7736eae: AMP
      {"scaler_growth_tracker", &TrainState::scaler_growth_tracker, "0"},
      {"elapsed_s", &TrainState::elapsed_s},
      {"results_csv", &TrainState::results_csv},
      {"completed", &TrainState::completed},
      {"names", &TrainState::names, ""},
      {"kpt_shape", &TrainState::kpt_shape, ""}};
  return table;
}

constexpr const char* kTaskPrefix = "task.";

std::string write(const TrainState& s, const StateMember& member) {
  return std::visit(
      [&](auto m) -> std::string {
        using T = std::decay_t<decltype(s.*m)>;
        if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(s.*m);
        if constexpr (std::is_same_v<T, double>) return exact_text(s.*m);
        if constexpr (std::is_same_v<T, std::string>) return s.*m;
        if constexpr (std::is_same_v<T, bool>) return s.*m ? "1" : "0";
      },
      member);
}

// False when `text` is not a value of the member's type.
bool read(TrainState& s, const StateMember& member, const std::string& text) {
  return std::visit(
      [&](auto m) -> bool {
        using T = std::decay_t<decltype(s.*m)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), s.*m);
          return ec == std::errc() && end == text.data() + text.size() && !text.empty();
        }
        if constexpr (std::is_same_v<T, double>) {
          char* end = nullptr;
          s.*m = std::strtod(text.c_str(), &end);
          return !text.empty() && end == text.c_str() + text.size();
        }
        if constexpr (std::is_same_v<T, std::string>) {
          s.*m = text;
          return true;
        }
        if constexpr (std::is_same_v<T, bool>) {
          s.*m = text == "1";
          return text == "1" || text == "0";
        }
      },
      member);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string exact_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);  // hex float: round-trips bit for bit
  return buf;
}

bool TrainState::note_fitness(double fitness, bool ultralytics84) {
  if (ultralytics84 ? fitness > stopper_fitness || stopper_fitness == 0 : fitness >= stopper_fitness) {
    stopper_fitness = fitness;
    stopper_epoch = epoch;
  }
  if (!(fitness >= best_fitness)) return false;  // NaN too
  best_fitness = fitness;
  best_epoch = epoch;
  return true;
}

std::map<std::string, std::string> TrainState::to_extra() const {
  std::map<std::string, std::string> extra;
  for (const auto& f : state_fields()) extra[f.key] = write(*this, f.member);
  for (const auto& [key, value] : task) extra[kTaskPrefix + key] = value;
  return extra;
}

at::Tensor TrainState::loss_means_tensor() const {
  return at::tensor(loss_means, at::kDouble);
}

TrainState TrainState::from_checkpoint(const std::map<std::string, std::string>& extra, std::int64_t epoch,
                                       const at::Tensor& loss_means, const std::string& source) {
  TrainState s;
  s.epoch = epoch;
  std::vector<std::string> missing, unreadable, unknown;
  for (const auto& f : state_fields()) {
    const auto it = extra.find(f.key);
    if (it == extra.end() && f.absent == nullptr) {
      missing.push_back(f.key);
    } else if (!read(s, f.member, it == extra.end() ? f.absent : it->second)) {
      unreadable.push_back(std::string(f.key) + "=\"" + it->second + "\"");
    }
  }
  for (const auto& [key, value] : extra) {
    if (key.rfind(kTaskPrefix, 0) == 0) {
      s.task[key.substr(std::char_traits<char>::length(kTaskPrefix))] = value;
      continue;
    }
    bool known = false;
    for (const auto& f : state_fields()) known = known || key == f.key;
    if (!known) unknown.push_back(key);
  }
  std::string problems;
  if (!missing.empty()) problems += "; it lacks " + joined(missing);
  if (!unreadable.empty()) problems += "; unreadable: " + joined(unreadable);
  if (!unknown.empty()) problems += "; fields this yolotrain does not know: " + joined(unknown);
  if (!problems.empty()) {
    throw ConfigError("checkpoint " + source + ": its training state cannot be resumed" + problems +
                      " (written by another yolotrain version?); resume a checkpoint this version wrote, or "
                      "start from its weights with model=");
  }
  if (s.stopper_epoch < 0 && s.best_epoch >= 0) {  // written before the two were apart: then they were one
    s.stopper_epoch = s.best_epoch;
    s.stopper_fitness = std::max(s.best_fitness, 0.0);
  }
  const at::Tensor means = loss_means.to(at::kDouble).contiguous();
  s.loss_means.assign(means.data_ptr<double>(), means.data_ptr<double>() + means.numel());
  return s;
}

}  // namespace yolotrain::engine
