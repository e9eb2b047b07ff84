#include "yolotrain/nn/weights.hpp"

#include <ATen/ATen.h>

#include <iostream>
#include <set>
#include <unordered_map>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"

namespace yolotrain::nn {
namespace {

void collect(const torch::nn::Module& module, const std::string& prefix, NamedTensors& out) {
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    if (p.value().defined()) out.emplace_back(prefix + p.key(), p.value());
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false)) {
    if (b.value().defined()) out.emplace_back(prefix + b.key(), b.value());
  }
  for (const auto& child : module.named_children()) collect(*child.value(), prefix + child.key() + ".", out);
}

std::string list(const std::vector<std::string>& names, size_t max = 8) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ... and " + std::to_string(names.size() - max) + " more";
  return s;
}

std::string describe(const LoadReport& r) {
  std::string s;
  if (!r.missing.empty())
    s += "\n  " + std::to_string(r.missing.size()) + " missing from the weights: " + list(r.missing);
  if (!r.unexpected.empty()) {
    s += "\n  " + std::to_string(r.unexpected.size()) + " not in the model: " + list(r.unexpected);
  }
  if (!r.mismatched.empty()) {
    s += "\n  " + std::to_string(r.mismatched.size()) + " with another shape: " + list(r.mismatched);
  }
  return s;
}

}  // namespace

NamedTensors read_safetensors(const std::filesystem::path& path, std::map<std::string, std::string>* metadata) {
  const std::string bytes = lifecycle::read_file(path);
  return lifecycle::decode_safetensors(bytes, path.string(), metadata);
}

void write_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  lifecycle::atomic_write(path, lifecycle::encode_safetensors(tensors, metadata));
}

NamedTensors state_dict(const torch::nn::Module& module) {
  NamedTensors out;
  collect(module, "", out);
  return out;
}

LoadReport load_state_dict(torch::nn::Module& module, const NamedTensors& tensors, bool strict,
                           const std::string& source) {
  const NamedTensors own = state_dict(module);
  std::unordered_map<std::string, const at::Tensor*> given;
  for (const auto& [name, t] : tensors) given.emplace(name, &t);
  LoadReport report;
  std::set<std::string> known;
  std::vector<std::pair<at::Tensor, const at::Tensor*>> copies;
  for (const auto& [name, target] : own) {
    known.insert(name);
    const auto it = given.find(name);
    if (it == given.end()) {
      report.missing.push_back(name);
    } else if (it->second->sizes() != target.sizes()) {
      report.mismatched.push_back(name + " " + c10::str(it->second->sizes()) + " in the weights vs " +
                                  c10::str(target.sizes()) + " in the model");
    } else {
      copies.emplace_back(target, it->second);
      report.loaded.push_back(name);
    }
  }
  for (const auto& [name, t] : tensors) {
    if (!known.count(name)) report.unexpected.push_back(name);
  }
  if (strict && !report.complete()) {
    throw Error("load weights " + source + ": they do not fit this model (nothing was loaded):" + describe(report) +
                "\nUse the weights of this architecture (same YAML, scale and nc), or load with strict = false to "
                "take the matching tensors only (for example to fine-tune on another nc).");
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& [target, src] : copies) target.copy_(*src);
  }
  if (!report.complete()) {
    std::cerr << "yolotrain: warning: loaded " << report.loaded.size() << " of " << own.size() << " tensors from "
              << source << ";" << describe(report) << std::endl;
  }
  return report;
}

std::size_t transfer_weights(torch::nn::Module& module, const NamedTensors& tensors) {
  std::unordered_map<std::string, const at::Tensor*> given;
  for (const auto& [name, t] : tensors) given.emplace(name, &t);
  torch::NoGradGuard no_grad;
  std::size_t copied = 0;
  for (auto& [name, target] : state_dict(module)) {
    const auto it = given.find(name);
    if (it == given.end() || it->second->sizes() != target.sizes()) continue;
    target.copy_(*it->second);
    ++copied;
  }
  return copied;
}

LoadReport load_weights(torch::nn::Module& module, const std::filesystem::path& path, bool strict) {
  return load_state_dict(module, read_safetensors(path), strict, path.string());
}

void save_weights(const torch::nn::Module& module, const std::filesystem::path& path,
                  const std::map<std::string, std::string>& metadata) {
  write_safetensors(path, state_dict(module), metadata);
}

}  // namespace yolotrain::nn
