#pragma once

#include <torch/nn/module.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "yolotrain/lifecycle/files/safetensors.hpp"

namespace yolotrain::nn {

/// Tensors with names, in a fixed order (a state dict).
using NamedTensors = lifecycle::NamedTensors;

/// Reads a .safetensors file: the tensors (CPU) in file order; its `__metadata__` goes to
/// `metadata` when given. Dtypes F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL. A malformed
/// file (bad lengths, overlapping or out-of-range offsets, unknown dtype, shape that does not fit
/// its bytes) throws yolotrain::Error naming the file and the problem; nothing is read out of bounds.
NamedTensors read_safetensors(const std::filesystem::path& path,
                              std::map<std::string, std::string>* metadata = nullptr);

/// Writes `tensors` in order to a .safetensors file, atomically (temporary file, fsync, rename).
/// The same tensors and metadata always give the same bytes.
void write_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// The module's state dict in PyTorch's order and naming: for each module (pre-order), its own
/// parameters then its own buffers, named by their dotted paths ("model.0.conv.weight").
/// The tensors are the module's own (not copies).
NamedTensors state_dict(const torch::nn::Module& module);

/// What load_state_dict()/load_weights() did.
struct LoadReport {
  std::vector<std::string> loaded;      ///< names copied into the module
  std::vector<std::string> missing;     ///< in the module, not in the weights
  std::vector<std::string> unexpected;  ///< in the weights, not in the module
  /// in both, with another shape ("name [..] in the weights vs [..] in the model")
  std::vector<std::string> mismatched;
  /// True when every name matched with its shape.
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
};

/// Copies `tensors` into the module's parameters and buffers by name (converting dtype, keeping
/// the module's device). `strict`: any missing, unexpected or shape-mismatched name throws one
/// yolotrain::Error listing them all and nothing is copied. Not strict: the matching ones are
/// loaded and a warning listing the rest goes to stderr. `source` names the weights in messages.
LoadReport load_state_dict(torch::nn::Module& module, const NamedTensors& tensors, bool strict,
                           const std::string& source = "weights");

/// Ultralytics' DetectionModel.load(): copies the tensors whose name and shape match the
/// module's (intersect_dicts) and leaves the rest as they are; returns how many were copied (of
/// state_dict(module).size()). For fine-tuning from weights of another nc: the head's class
/// convolutions keep their fresh initialisation.
std::size_t transfer_weights(torch::nn::Module& module, const NamedTensors& tensors);

/// load_state_dict() of a .safetensors file (for example Ultralytics weights exported by
/// scripts/export_ultralytics_weights.py): `load_weights(*model, "yolov8n.safetensors", true)`.
LoadReport load_weights(torch::nn::Module& module, const std::filesystem::path& path, bool strict = true);

/// Writes the module's state dict to a .safetensors file (readable by Ultralytics with
/// safetensors.torch.load_file and model.load_state_dict).
void save_weights(const torch::nn::Module& module, const std::filesystem::path& path,
                  const std::map<std::string, std::string>& metadata = {});

}  // namespace yolotrain::nn
