// Links yolotrain::lifecycle through find_package and uses it: a token, a signal binding and a
// checkpoint that is written, verified and read back.
#include <ATen/ATen.h>

#include <iostream>

#include "yolotrain/yolotrain.hpp"

int main(int argc, char** argv) {
  namespace lc = yolotrain::lifecycle;
  if (argc != 2) {
    std::cerr << "usage: consumer DIR\n";
    return 2;
  }
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  lc::CheckpointStore store({argv[1], 2, "consumer", "ckpt", {}});
  lc::Checkpoint ckpt;
  ckpt.meta.step = 7;
  ckpt.tensors.emplace_back("w", at::arange(6, at::kFloat));
  store.save(ckpt);
  const lc::LoadResult loaded = store.load_latest();
  if (!loaded.checkpoint || loaded.checkpoint->meta.step != 7 ||
      !loaded.checkpoint->tensor("w").equal(at::arange(6, at::kFloat))) {
    std::cerr << "consumer: checkpoint did not round-trip\n";
    return 1;
  }
  std::cout << "yolotrain " << yolotrain::version() << ": checkpoint round-trip ok\n";
  return 0;
}
