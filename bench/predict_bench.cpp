// Per-image predict time of every CPU forward the Predictor has, on real images: the fused network
// run by oneDNN directly in each activation layout (and in bfloat16 where the CPU has it natively),
// libtorch's forward fused and unfused. Prints which one a plain Predictor takes here
// (`default: <label>`), then the paths in alternation: within a round every image goes through
// every path before the next image (the order rotating), so this machine's drift falls on all
// paths alike; per round the mean, at the end each path's median round and its ratio to the
// default's, and how far each path's detections are from the default's (`agreement`).
// Run: build/bench/predict_bench [model=PATH|yolov8n.yaml] [source=DIR] [imgsz=640] [threads=2]
//      [images=16] [rounds=5] [batch=1] [paths=all|LIST] [conf=0.25]
// paths: forward values (PredictOptions::forward) separated by commas, "unfused" for libtorch's
// unfused forward; all = onednn-nhwc,onednn-nchw16c,onednn-nchw8c,libtorch,unfused and
// onednn-nhwc-bf16,onednn-nchw16c-bf16 where the CPU computes bfloat16 natively.
// model=yolov8n.yaml benchmarks a freshly initialised nc-80 yolov8n; the default is the shared
// Ultralytics best.pt (nc 3). Prints figures only.
#include "yolotrain/engine/cpu_threads.hpp"

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

// How far a path's detections are from the default's: boxes matched greedily by class and IoU > 0.5.
struct Agreement {
  std::size_t boxes = 0, unmatched = 0, matched = 0;
  double px = 0, conf = 0;  // the largest corner and confidence differences of matched boxes
  double px_sum = 0;        // their corners' mean difference, summed
};

double iou(const yp::Detection& a, const yp::Detection& b) {
  const double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1), h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const double inter = std::max(0.0, w) * std::max(0.0, h);
  const double area = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return area > 0 ? inter / area : 0;
}

void agree(const yp::Prediction& want, const yp::Prediction& got, Agreement& out) {
  std::vector<bool> used(got.boxes.size(), false);
  out.boxes += want.boxes.size();
  for (const auto& w : want.boxes) {
    std::size_t best = got.boxes.size();
    double best_iou = 0.5;
    for (std::size_t j = 0; j < got.boxes.size(); ++j) {
      if (!used[j] && got.boxes[j].cls == w.cls && iou(w, got.boxes[j]) > best_iou)
        best_iou = iou(w, got.boxes[best = j]);
    }
    if (best == got.boxes.size()) {
      ++out.unmatched;
      continue;
    }
    used[best] = true;
    const auto& g = got.boxes[best];
    const double dx1 = std::abs(g.x1 - w.x1), dy1 = std::abs(g.y1 - w.y1), dx2 = std::abs(g.x2 - w.x2),
                 dy2 = std::abs(g.y2 - w.y2);
    out.px = std::max({out.px, dx1, dy1, dx2, dy2});
    out.px_sum += (dx1 + dy1 + dx2 + dy2) / 4;
    ++out.matched;
    out.conf = std::max(out.conf, double(std::abs(g.conf - w.conf)));
  }
  out.unmatched += static_cast<std::size_t>(std::count(used.begin(), used.end(), false));
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
      {"imgsz", "640"}, {"threads", "2"}, {"images", "16"}, {"rounds", "5"},
      {"batch", "1"},   {"paths", "all"}, {"conf", "0.25"}};
  if (!yolotrain::bench::parse_args("predict_bench", argc, argv, a)) return 2;
  yolotrain::engine::use_cpu_threads(std::stoi(a["threads"]));  // as yolo_train does
  fs::path weights = a["model"];
  if (weights.extension() == ".yaml") {  // a fresh model, written once to a temporary file
    yolotrain::nn::DetectionModel fresh{yolotrain::nn::DetectionModelOptions(a["model"])};
    weights = fs::temp_directory_path() / "predict_bench_fresh.safetensors";
    yolotrain::nn::save_weights(*fresh, weights, {{"ultralytics", "8.4"}});  // built as 8.4 builds it
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
  base.conf = std::stod(a["conf"]);
  std::printf("model %s, %zu images from %s, imgsz %s, batch %zu, %d threads\n", weights.string().c_str(),
              images.size(), a["source"].c_str(), a["imgsz"].c_str(), batch, at::get_num_threads());
  const std::string default_label = yp::Predictor(weights, base).forward();
  std::printf("default: %s\n", default_label.c_str());

  std::string list = a["paths"];
  if (list == "all")
    list = "onednn-nhwc,onednn-nchw16c,onednn-nchw8c,libtorch,unfused,onednn-nhwc-bf16,onednn-nchw16c-bf16";
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
    for (const auto& p :
         path.predictor.predict(std::vector<yolotrain::data::Image>(images.begin() + i, images.begin() + i + batch))) {
      ms += p.speed.inference;
    }
    return ms;
  };
  const std::size_t used = images.size() / batch * batch;
  for (Path& path : paths) {  // every letterbox size's first call: its primitives are built then
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < used; i += batch) one(path, i);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    std::printf("first pass %-22s %6.1f ms per image (every size's first call)\n", path.label.c_str(),
                took.count() / used);
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
  // What each path changes in the detections (conf as set, default 0.25), against the default's.
  std::vector<yp::Prediction> reference;
  for (Path& path : paths) {
    if (path.label != default_label) continue;
    for (const auto& image : images) reference.push_back(path.predictor.predict(image));
  }
  for (Path& path : paths) {
    if (path.label == default_label || reference.empty()) continue;
    Agreement a;
    for (std::size_t i = 0; i < images.size(); ++i) agree(reference[i], path.predictor.predict(images[i]), a);
    std::printf("agreement %-22s %zu boxes, %zu unmatched; matched: corners %.4f px apart on average, %.4f px at most, "
                "confidences %.2e at most\n",
                path.label.c_str(), a.boxes, a.unmatched, a.matched ? a.px_sum / a.matched : 0.0, a.px, a.conf);
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
