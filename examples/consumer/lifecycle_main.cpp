// Links only yolotrain::lifecycle, as a program with its own libtorch loop does: a token, a
// signal binding, a pause's state on status.json, a checkpoint written, verified and read back.
// It needs neither libcurl nor pugixml (object storage is yolotrain::remote).
#include <ATen/ATen.h>

#include <filesystem>
#include <iostream>

#include "yolotrain/lifecycle.hpp"

int main(int argc, char** argv) {
  namespace lc = yolotrain::lifecycle;
  if (argc != 2) {
    std::cerr << "usage: lifecycle_consumer DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  lc::RunStatus status(dir / "status.json");
  status.set_state(lc::RunState::Running);
  lc::CheckpointStore store({dir / "weights", 2, "lifecycle_consumer", "ckpt", {}});
  std::int64_t written_step = -1;
  store.on_written([&written_step](const std::filesystem::path&, std::int64_t step) { written_step = step; });
  lc::Checkpoint ckpt;
  ckpt.meta.step = 3;
  ckpt.tensors.emplace_back("w", at::arange(4, at::kFloat));
  store.save(ckpt);
  const lc::LoadResult loaded = store.load_latest();
  if (!loaded.checkpoint || loaded.checkpoint->meta.step != 3 || written_step != 3) {
    std::cerr << "lifecycle_consumer: the checkpoint did not round-trip\n";
    return 1;
  }
  std::cout << "yolotrain " << yolotrain::version() << ": the lifecycle core alone, checkpoint round-trip ok\n";
  return 0;
}
