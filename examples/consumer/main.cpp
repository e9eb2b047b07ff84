// Links yolotrain through find_package and uses it: a token, a signal binding, a checkpoint that
// is written, verified and read back, and a YOLOv8n built from the installed model YAML by name.
#include <ATen/ATen.h>

#include <iostream>

#include "yolotrain/nn/detection_model.hpp"
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
  // The model YAMLs are installed with the package and found by name.
  yolotrain::nn::DetectionModel model(yolotrain::nn::DetectionModelOptions("yolov8n.yaml").nc(80));
  std::int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  if (parameters != 3157200) {
    std::cerr << "consumer: yolov8n has " << parameters << " parameters, expected 3157200\n";
    return 1;
  }
  std::cout << "yolotrain " << yolotrain::version() << ": checkpoint round-trip ok, yolov8n from "
            << model->yaml_path().string() << "\n";
  return 0;
}
