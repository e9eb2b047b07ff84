#pragma once

// key=value arguments: the values' parsers every mode shares (train's TrainConfig reads booleans
// and None through them too, so `yes` or `~` mean the same everywhere), and the loop over a table
// of arguments of the modes beside training (predict, export). Every failure is a ConfigError
// naming the argument, the value and what is allowed. Private to the library.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "yolotrain/error.hpp"

namespace yolotrain::engine::args {

[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& allowed);
/// true, 1 or yes; false, 0 or no (any case: YAML's and Python's spellings).
bool to_bool(const std::string& key, const std::string& v);
/// An integer from min to max.
std::int64_t to_int(const std::string& key, const std::string& v, std::int64_t min, std::int64_t max);
/// A finite number from min to max.
double to_double(const std::string& key, const std::string& v, double min, double max);
/// Empty, None, null or ~ (any case).
bool is_none(const std::string& v);
/// "0,2", "[0, 2]" or "0" -> {0, 2} (each 0 to 2^20).
std::vector<std::int64_t> int_list(const std::string& key, std::string v);

/// One argument of a mode: its default and meaning (for --help) and how it sets the config.
template <class Config>
struct Arg {
  std::string default_value, help;
  std::function<void(Config&, const std::string&)> set;
};
template <class Config>
using ArgTable = std::map<std::string, Arg<Config>>;

/// Applies key=value `args` to `cfg` through `table`; `mode` names the mode in messages.
template <class Config>
void apply(const std::string& mode, const ArgTable<Config>& table, const std::vector<std::string>& args, Config& cfg) {
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos) {
      throw ConfigError("'" + a + "': " + mode + " arguments are key=value (see yolo_train --help)");
    }
    const std::string key = a.substr(0, eq);
    const auto it = table.find(key);
    if (it == table.end()) {
      std::string known;
      for (const auto& entry : table) known += (known.empty() ? "" : ", ") + entry.first;
      throw ConfigError(mode + " has no argument '" + key + "'; its arguments are " + known);
    }
    it->second.set(cfg, a.substr(eq + 1));
  }
}

/// {name, default, help} of every argument, for --help.
template <class Config>
std::vector<std::array<std::string, 3>> describe(const ArgTable<Config>& table) {
  std::vector<std::array<std::string, 3>> out;
  for (const auto& [k, a] : table) out.push_back({k, a.default_value, a.help});
  return out;
}

}  // namespace yolotrain::engine::args
