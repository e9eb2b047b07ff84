#pragma once

#include <ATen/core/Tensor.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace yolotrain::lifecycle {

/// The key under which a torch::optim optimizer keeps a parameter's state: libtorch 1.x keys
/// `optimizer.state()` by the TensorImpl address as a string, 2.x by the pointer itself. Use it
/// to save and restore optimizer state with any libtorch:
/// `auto& state = opt.state(); state.find(optimizer_state_key(state, param))`.
template <typename StateMap>
typename StateMap::key_type optimizer_state_key(const StateMap&, const at::Tensor& param) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream ss;
    ss << param.unsafeGetTensorImpl();
    return ss.str();
  } else {
    return param.unsafeGetTensorImpl();
  }
}

}  // namespace yolotrain::lifecycle
