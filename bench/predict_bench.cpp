// Per-image predict time of the Predictor on this CPU: preprocess / inference / postprocess at
// batch 1 and 8: the fused network run by oneDNN directly (the Predictor's CPU default), the fused
// network run by libtorch (onednn=false) and the unfused one, on real images.
// Run: build/bench/predict_bench [model=PATH|yolov8n.yaml] [source=DIR] [imgsz=640] [threads=2] [images=16] [rounds=3]
// model=yolov8n.yaml benchmarks a freshly initialised nc-80 yolov8n (the head Ultralytics'
// yolov8n.pt has); the default is the shared Ultralytics best.pt (nc 3). Prints figures only.
#include <ATen/Parallel.h>

#include "bench_args.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/predict/predictor.hpp"
#include "yolotrain/predict/sources.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace fs = std::filesystem;
namespace yp = yolotrain::predict;

int main(int argc, char** argv) {
  yolotrain::engine::prefer_avx512_kernels();
  std::map<std::string, std::string> a = {
      {"model", std::string(YOLOTRAIN_SHARED_DIR) + "/weights/ultralytics/bccd_yolov8n/best.pt"},
      {"source", std::string(YOLOTRAIN_SHARED_DIR) + "/datasets/coco128/images/train"},
      {"imgsz", "640"}, {"threads", "2"}, {"images", "16"}, {"rounds", "3"}};
  if (!yolotrain::bench::parse_args("predict_bench", argc, argv, a)) return 2;
  at::set_num_threads(std::stoi(a["threads"]));
  fs::path weights = a["model"];
  if (weights.extension() == ".yaml") {  // a fresh model, written once to a temporary file
    yolotrain::nn::DetectionModel fresh{yolotrain::nn::DetectionModelOptions(a["model"])};
    weights = fs::temp_directory_path() / "predict_bench_fresh.safetensors";
    yolotrain::nn::save_weights(*fresh, weights);
  }
  const auto files = yp::expand_source(a["source"]).images;
  std::vector<yolotrain::data::Image> images;
  for (std::size_t i = 0; i < files.size() && images.size() < std::stoul(a["images"]); ++i) {
    images.push_back(yolotrain::data::decode_image(files[i]));
  }
  std::printf("model %s, %zu images from %s, imgsz %s, %d threads\n", weights.string().c_str(), images.size(),
              a["source"].c_str(), a["imgsz"].c_str(), at::get_num_threads());
  struct Variant {
    const char* name;
    bool fuse, onednn;
  };
  const std::vector<Variant> variants{{"oneDNN", true, true}, {"fused", true, false}, {"unfused", false, false}};
  std::vector<yp::Predictor> predictors;
  for (const Variant& v : variants) {
    yp::PredictOptions o;
    o.imgsz_h = o.imgsz_w = std::stoll(a["imgsz"]);
    o.device = "cpu";
    o.fuse = v.fuse;
    o.onednn = v.onednn;
    predictors.emplace_back(weights, o);
  }
  const auto run = [&](yp::Predictor& predictor, std::size_t batch) {
    yp::Speed sum;
    std::size_t n = 0;
    for (std::size_t i = 0; i + batch <= images.size(); i += batch) {
      for (const auto& p : predictor.predict(std::vector<yolotrain::data::Image>(images.begin() + i, images.begin() + i + batch))) {
        sum.preprocess += p.speed.preprocess;
        sum.inference += p.speed.inference;
        sum.postprocess += p.speed.postprocess;
        ++n;
      }
    }
    return std::pair{sum, n};
  };
  // One untimed pass over the images first (every letterbox size once), then the variants in
  // alternation, `rounds` times: this machine's speed drifts.
  for (std::size_t r = 0; r <= std::stoul(a["rounds"]); ++r) {
    for (std::size_t k = 0; k < variants.size(); ++k) {
      for (const std::size_t batch : {std::size_t(1), std::size_t(8)}) {
        if (batch > images.size()) continue;
        const auto start = std::chrono::steady_clock::now();
        const auto [sum, n] = run(predictors[k], batch);
        if (r == 0) {
          const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
          std::printf("first pass %-8s batch %zu: %6.1f ms per image (every size's first call)\n", variants[k].name,
                      batch, took.count() / static_cast<double>(n));
          continue;
        }
        std::printf("round %zu %-8s batch %zu: %6.1f ms preprocess, %6.1f ms inference, %5.1f ms postprocess per image (%zu images)\n",
                    r, variants[k].name, batch, sum.preprocess / n, sum.inference / n, sum.postprocess / n, n);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
