// Ultralytics 8.4's class-row remap by name (nn/tasks.py:340-400), written from its code: the rules
// of which tensors count and when nothing happens are its own, kept in its order.
#include "yolotrain/nn/class_remap.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

namespace yolotrain::nn {
namespace {

std::string normalised(const std::string& name) {
  const auto first = name.find_first_not_of(" \t\r\n"), last = name.find_last_not_of(" \t\r\n");
  std::string s = first == std::string::npos ? "" : name.substr(first, last - first + 1);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// Ultralytics' {0: "0", 1: "1", ...} (and an empty dict): nothing to match on.
bool placeholder(const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] != std::to_string(i)) return false;
  }
  return true;
}

// For each class of `to`, its index in `from` by name, or -1 (Python's dict: the last of a repeated name).
std::vector<std::int64_t> class_index(const std::vector<std::string>& from, const std::vector<std::string>& to) {
  std::map<std::string, std::int64_t> lookup;
  for (std::size_t i = 0; i < from.size(); ++i) lookup[normalised(from[i])] = std::int64_t(i);
  std::vector<std::int64_t> idx;
  for (const auto& name : to) {
    const auto it = lookup.find(normalised(name));
    idx.push_back(it == lookup.end() ? -1 : it->second);
  }
  return idx;
}

}  // namespace

ClassRemap remap_class_rows(torch::nn::Module& model, NamedTensors& tensors, const std::vector<std::string>& from,
                            const std::vector<std::string>& to) {
  ClassRemap r;
  r.nc = to.size();
  if (placeholder(from) || placeholder(to)) return r;
  const std::vector<std::int64_t> idx = class_index(from, to);
  std::vector<std::int64_t> rows, source_rows;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] < 0) continue;
    rows.push_back(std::int64_t(k));
    source_rows.push_back(idx[k]);
  }
  r.matched = rows.size();
  bool identity = from.size() == to.size();
  for (std::size_t k = 0; k < idx.size(); ++k) identity = identity && idx[k] == std::int64_t(k);
  if (r.matched == 0 || identity) return r;
  // The head's class-logit convolutions: the last (a plain Conv2d) of each cv3 / one2one_cv3 branch.
  static const std::regex logits(R"(.*\.(one2one_)?cv3\.\d+\.\d+\.(weight|bias))");
  const at::Tensor target_rows = at::tensor(rows, at::kLong), taken = at::tensor(source_rows, at::kLong);
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : state_dict(model)) {
    if (!std::regex_match(name, logits) || target.dim() == 0 || target.size(0) != std::int64_t(r.nc)) continue;
    const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.first == name; });
    if (it == tensors.end() || it->second.dim() != target.dim()) continue;
    if (it->second.sizes().slice(1) != target.sizes().slice(1)) continue;  // c3 follows nc: the bias only
    target.index_copy_(0, target_rows, it->second.index_select(0, taken).to(target.scalar_type()));
    tensors.erase(it);
    ++r.tensors;
  }
  return r;
}

}  // namespace yolotrain::nn
