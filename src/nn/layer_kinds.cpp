#include <algorithm>

#include "layer_row.hpp"
#include "yolotrain/nn/layer_kind.hpp"

namespace yolotrain::nn {

// The list is explicit (not self-registering objects) so a static libyolotrain keeps every kind.
const std::vector<LayerKind>& layer_kinds() {
  static const std::vector<LayerKind> kinds = {
      detail::conv_kind(),     detail::dwconv_kind(),   detail::c2f_kind(),     detail::c3k2_kind(),
      detail::bottleneck_kind(), detail::sppf_kind(),   detail::c2psa_kind(),   detail::upsample_kind(),
      detail::concat_kind(),   detail::detect_kind(),   detail::segment_kind(), detail::segment26_kind(),
      detail::pose_kind(),     detail::pose26_kind(),   detail::obb_kind(),
      detail::obb26_kind(),    detail::classify_kind()};
  return kinds;
}

const LayerKind* find_layer_kind(const std::string& name) {
  const auto& kinds = layer_kinds();
  const auto it = std::find_if(kinds.begin(), kinds.end(), [&](const LayerKind& k) { return k.name == name; });
  return it == kinds.end() ? nullptr : &*it;
}

std::string layer_kind_names() {
  std::string out;
  for (const auto& k : layer_kinds()) out += (out.empty() ? "" : ", ") + k.name;
  return out;
}

}  // namespace yolotrain::nn
