// Links yolotrain through find_package and uses every part through the one umbrella header: a
// token, a signal binding, a checkpoint written, verified and read back (lifecycle); a YOLOv8n
// built from the installed model YAML by name (nn); its weights written and read back (io), run
// by a Predictor (predict) whose raw output goes through NMS (metrics) and box ops (loss); a
// training configuration (engine), an image (data), the distributed environment (dist) and an
// ONNX export of the weights (export).
#include <ATen/ATen.h>

#include <filesystem>
#include <iostream>

#include "yolotrain/yolotrain.hpp"

namespace {

int fail(const std::string& what) {
  std::cerr << "consumer: " << what << "\n";
  return 1;
}

}  // namespace

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
  const std::filesystem::path weights = std::filesystem::path(argv[1]) / "yolov8n.safetensors";
  yolotrain::nn::save_weights(*model, weights);
  const yolotrain::io::ModelWeights read = yolotrain::io::read_model_weights(weights);
  if (read.nc != 80 || read.model_yaml != "yolov8n.yaml") return fail("the weights did not read back as yolov8n nc 80");
  yolotrain::predict::PredictOptions options;
  options.imgsz_h = options.imgsz_w = 64;
  options.device = "cpu";
  yolotrain::predict::Predictor predictor(weights, options);
  const yolotrain::predict::Prediction p = predictor.predict(yolotrain::data::Image(48, 64, 114));
  if (p.input_h != 64 || p.input_w != 64 || p.orig_h != 48) return fail("the predictor letterboxed wrongly");
  yolotrain::exporter::OnnxExportOptions onnx;
  onnx.imgsz_h = onnx.imgsz_w = 64;
  const auto exported =
      yolotrain::exporter::export_onnx(weights, std::filesystem::path(argv[1]) / "yolov8n.onnx", onnx);
  if (exported.bytes < 12'000'000) return fail("the ONNX export is smaller than yolov8n's weights");
  const auto kept = yolotrain::metrics::non_max_suppression(at::zeros({1, 84, 10}));
  if (kept.size() != 1 || kept[0].size(0) != 0) return fail("NMS of nothing kept something");
  if (!yolotrain::loss::xywh2xyxy(at::tensor({2.f, 2.f, 2.f, 2.f}).view({1, 4}))
           .equal(at::tensor({1.f, 1.f, 3.f, 3.f}).view({1, 4}))) {
    return fail("xywh2xyxy is wrong");
  }
  if (yolotrain::engine::TrainConfig::from_args({"epochs=3"}).epochs != 3) return fail("TrainConfig did not parse");
  if (yolotrain::dist::DistEnv::from_environment()) return fail("a single process saw a distributed environment");
  std::cout << "yolotrain " << yolotrain::version() << ": checkpoint round-trip ok, yolov8n from "
            << model->yaml_path().string() << ", every part through yolotrain.hpp\n";
  return 0;
}
