#include "yolotrain/export/safetensors_export.hpp"

#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn/weights.hpp"

namespace yolotrain::exporter {

std::filesystem::path export_safetensors(const std::filesystem::path& weights, const std::filesystem::path& out) {
  const io::ModelWeights w = io::read_model_weights(weights);
  nn::write_safetensors(out, w.tensors,
                        {{"format", "pt"}, {"names", io::encode_names(w.names)}, {"ultralytics", w.builds_like}});
  return out;
}

}  // namespace yolotrain::exporter
