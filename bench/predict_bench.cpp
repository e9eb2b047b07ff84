// Per-image predict time of every CPU forward the Predictor has, on real images: the fused network
// run by oneDNN directly in each activation layout (and in bfloat16 where the CPU has it natively),
// libtorch's forward fused and unfused. Prints which one a plain Predictor takes here
// (`default: <label>`), then the paths in alternation: within a round every image goes through
// every path before the next image (the order rotating), so this machine's drift falls on all
// paths alike; per round the mean, at the end each path's median round and its ratio to the
// default's.
// Run: build/bench/predict_bench [model=PATH|yolov8n.yaml] [source=DIR] [imgsz=640] [threads=2]
//      [images=16] [rounds=5] [batch=1] [paths=all|LIST]
// paths: forward values (PredictOptions::forward) separated by commas, "unfused" for libtorch's
// unfused forward; all = onednn-nhwc,onednn-nchw16c,onednn-nchw8c,libtorch,unfused and
// onednn-nhwc-bf16,onednn-nchw16c-bf16 where the CPU computes bfloat16 natively. model=yolov8n.yaml benchmarks a freshly
// initialised nc-80 yolov8n; the default is the shared Ultralytics best.pt (nc 3).
#include <ATen/Parallel.h>

#include "bench_args.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/predict/predictor.hpp"
#include "yolotrain/predict/sources.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace yp = yolotrain::predict;

namespace {

struct Path {
  std::string label;
  yp::Predictor predictor;
  std::vector<double> rounds;  // mean inference ms per image, per round
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  yolotrain::engine::prefer_avx512_kernels();
  std::map<std::string, std::string> a = {
      {"model", std::string(YOLOTRAIN_SHARED_DIR) + "/weights/ultralytics/bccd_yolov8n/best.pt"},
      {"source", std::string(YOLOTRAIN_SHARED_DIR) + "/datasets/coco128/images/train"},
      {"imgsz", "640"}, {"threads", "2"}, {"images", "16"}, {"rounds", "5"}, {"batch", "1"}, {"paths", "all"}};
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
  const std::size_t batch = std::stoul(a["batch"]);
  if (images.empty() || batch < 1 || batch > images.size()) {
    std::fprintf(stderr, "predict_bench: %zu images, batch %zu: nothing to time\n", images.size(), batch);
    return 2;
  }
  yp::PredictOptions base;
  base.imgsz_h = base.imgsz_w = std::stoll(a["imgsz"]);
  base.device = "cpu";
  std::printf("model %s, %zu images from %s, imgsz %s, batch %zu, %d threads\n", weights.string().c_str(), images.size(),
              a["source"].c_str(), a["imgsz"].c_str(), batch, at::get_num_threads());
  const std::string default_label = yp::Predictor(weights, base).forward();
  std::printf("default: %s\n", default_label.c_str());

  std::string list = a["paths"];
  if (list == "all") list = "onednn-nhwc,onednn-nchw16c,onednn-nchw8c,libtorch,unfused,onednn-nhwc-bf16,onednn-nchw16c-bf16";
  std::vector<Path> paths;
  for (const std::string& name : split(list)) {
    yp::PredictOptions o = base;
    o.forward = name == "unfused" ? "libtorch" : name;
    o.fuse = name != "unfused";
    yp::Predictor p(weights, o);
    const bool known = std::any_of(paths.begin(), paths.end(), [&](const Path& q) { return q.label == p.forward(); });
    const bool bf16 = name.size() > 5 && name.compare(name.size() - 5, 5, "-bf16") == 0;
    if (bf16 && p.forward().find("bf16") == std::string::npos) continue;  // said why on stderr
    if (!known) paths.push_back({p.forward(), std::move(p), {}});
  }

  const auto one = [&](Path& path, std::size_t i) {  // inference ms summed over the batch's images
    double ms = 0;
    for (const auto& p : path.predictor.predict(std::vector<yolotrain::data::Image>(images.begin() + i, images.begin() + i + batch))) {
      ms += p.speed.inference;
    }
    return ms;
  };
  const std::size_t used = images.size() / batch * batch;
  for (Path& path : paths) {  // every letterbox size's first call: its primitives are built then
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < used; i += batch) one(path, i);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    std::printf("first pass %-22s %6.1f ms per image (every size's first call)\n", path.label.c_str(), took.count() / used);
  }
  const std::size_t rounds = std::stoul(a["rounds"]);
  for (std::size_t r = 1; r <= rounds; ++r) {
    std::vector<double> sum(paths.size(), 0.0);
    std::size_t turn = r;
    for (std::size_t i = 0; i < used; i += batch, ++turn) {
      for (std::size_t k = 0; k < paths.size(); ++k) {
        const std::size_t which = (turn + k) % paths.size();
        sum[which] += one(paths[which], i);
      }
    }
    for (std::size_t k = 0; k < paths.size(); ++k) {
      paths[k].rounds.push_back(sum[k] / static_cast<double>(used));
      std::printf("round %zu %-22s %6.1f ms inference per image (%zu images)\n", r, paths[k].label.c_str(),
                  paths[k].rounds.back(), used);
    }
    std::fflush(stdout);
  }
  double default_ms = 0;
  for (const Path& path : paths) default_ms = path.label == default_label ? median(path.rounds) : default_ms;
  for (const Path& path : paths) {
    const double m = median(path.rounds);
    std::printf("median %-22s %6.1f ms (%.2fx the default's)%s\n", path.label.c_str(), m,
                default_ms > 0 ? m / default_ms : 0.0, path.label == default_label ? "  <- default" : "");
  }
  return 0;
}
