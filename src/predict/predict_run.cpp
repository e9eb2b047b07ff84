#include "yolotrain/predict/predict_run.hpp"

#include <torch/utils.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>

#include "../engine/run_folder.hpp"
#include "cpu_forward.hpp"
#include "yolotrain/engine/cpu_threads.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/predict/annotate.hpp"
#include "yolotrain/predict/sources.hpp"

namespace yolotrain::predict {
namespace fs = std::filesystem;

namespace {

// A classification's top 5: "name 0.87" (name first) or "0.87 name", joined by `separator`.
std::string top5_text(const Prediction& p, const std::vector<std::string>& names, const char* separator,
                      bool name_first) {
  std::string s;
  for (const std::int64_t c : p.top5) {
    char prob[16];
    std::snprintf(prob, sizeof(prob), "%.2f", static_cast<double>(p.probs.at(static_cast<std::size_t>(c))));
    const std::string name = c < static_cast<std::int64_t>(names.size()) ? names[c] : std::to_string(c);
    s += (s.empty() ? "" : separator) + (name_first ? name + " " + prob : prob + (" " + name));
  }
  return s;
}

// Results.verbose(): "2 persons, 1 bus, " by ascending class index, or "(no detections), "; a
// classification's top 5, "cat 0.87, dog 0.10, ".
std::string verbose_counts(const Prediction& p, const std::vector<std::string>& names) {
  if (!p.probs.empty()) return top5_text(p, names, ", ", true) + ", ";  // Results.verbose of a classification
  if (p.boxes.empty()) return "(no detections), ";
  std::map<std::int64_t, int> counts;
  for (const auto& d : p.boxes) ++counts[d.cls];
  std::string s;
  for (const auto& [c, n] : counts) {
    const std::string name = c >= 0 && c < static_cast<std::int64_t>(names.size()) ? names[c] : std::to_string(c);
    s += std::to_string(n) + " " + name + (n > 1 ? "s" : "") + ", ";
  }
  return s;
}

// Python's "%g".
std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// Results.save_txt: "cls xc yc w h [conf]" normalised to the original image (an OBB model's: "cls x1
// y1 x2 y2 x3 y3 x4 y4 [conf]", the corners, obb.xyxyxyxyn; a segmentation
// model's: "cls x1 y1 x2 y2 ... [conf]", its outline, masks.xyn; a pose model's keypoints after the
// box: x y [visibility] each, keypoints.xyn and conf; a classification's top 5, "0.87 cat" per
// line), appended.
void append_labels(const fs::path& file, const Prediction& p, const std::vector<std::string>& names, bool save_conf) {
  std::ofstream f(file, std::ios::app);
  if (!p.probs.empty()) f << top5_text(p, names, "\n", false) << '\n';  // a classification: "0.87 cat" lines
  for (const auto& d : p.boxes) {
    const double w = p.orig_w, h = p.orig_h;
    f << d.cls;
    if (d.xywhr.size() == 5) {  // an OBB box: its corners, xyxyxyxyn (float32 division)
      const std::vector<float> k = d.corners();
      for (std::size_t i = 0; i + 1 < k.size(); i += 2)
        f << ' ' << g(k[i] / static_cast<float>(p.orig_w)) << ' ' << g(k[i + 1] / static_cast<float>(p.orig_h));
    } else if (!d.mask.empty()) {  // float32 as numpy divides: coords /= img0_w
      for (std::size_t i = 0; i + 1 < d.polygon.size(); i += 2) {
        f << ' ' << g(d.polygon[i] / static_cast<float>(p.orig_w)) << ' '
          << g(d.polygon[i + 1] / static_cast<float>(p.orig_h));
      }
    } else {
      f << ' ' << g((d.x1 + d.x2) / 2.0 / w) << ' ' << g((d.y1 + d.y2) / 2.0 / h) << ' ' << g((d.x2 - d.x1) / w) << ' '
        << g((d.y2 - d.y1) / h);
    }
    for (std::size_t i = 0; d.keypoint_dims >= 2 && i + 1 < d.keypoints.size(); i += d.keypoint_dims) {
      f << ' ' << g(d.keypoints[i] / static_cast<float>(p.orig_w)) << ' '
        << g(d.keypoints[i + 1] / static_cast<float>(p.orig_h));  // float32, as xy / orig_shape
      if (d.keypoint_dims == 3) f << ' ' << g(d.keypoints[i + 2]);
    }
    if (save_conf) f << ' ' << g(d.conf);
    f << '\n';
  }
  if (!f) throw Error("cannot write " + file.string());
}

// The annotated image under the source's file name (JPEG quality 95 as cv2.imwrite; PNG for
// .png; other formats, which this build cannot write, as <name>.jpg).
void save_annotated(const fs::path& dir, const fs::path& source, const data::Image& image) {
  std::string ext = source.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".png") {
    data::write_bytes(dir / source.filename(), data::encode_png(image));
  } else {
    const fs::path name =
        ext == ".jpg" || ext == ".jpeg" ? source.filename() : fs::path(source.filename().string() + ".jpg");
    data::write_bytes(dir / name, data::encode_jpeg(image, 95));
  }
}

struct Totals {
  double pre = 0, infer = 0, post = 0;
  std::int64_t seen = 0;
  int last_h = 0, last_w = 0;
};

}  // namespace

PredictRunResult run_predict(const PredictConfig& cfg, const lifecycle::ControlToken& token, std::ostream& out,
                             std::ostream& err) {
  engine::use_cpu_threads(engine::intra_op_threads(cfg.threads));  // every core unless told, as training
  // Bad weights or a source that names nothing: the command line must change (exit 2).
  std::optional<Predictor> loaded;
  SourceFiles files;
  try {
    loaded.emplace(cfg.model, cfg.predictor);
    files = expand_source(cfg.source);
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    throw ConfigError(e.what());
  }
  Predictor& predictor = *loaded;
  PredictRunResult result;
  for (const auto& v : files.videos) {
    err << "predict: " << v.string() << ": a video; this build reads images only (no OpenCV videoio), skipped\n";
    ++result.failed;
  }
  if (cfg.save || cfg.save_txt) {
    result.save_dir = engine::make_run_dir(cfg.project, cfg.name, cfg.exist_ok, cfg.save_txt ? "labels" : "");
  }
  const std::size_t nf = files.images.size();
  Totals totals;
  for (std::size_t start = 0; start < nf && !token.stop_requested(); start += static_cast<std::size_t>(cfg.batch)) {
    std::vector<data::Image> images;
    std::vector<std::size_t> index;  // position in files.images of each decoded image
    for (std::size_t k = start; k < std::min(nf, start + static_cast<std::size_t>(cfg.batch)); ++k) {
      try {
        images.push_back(data::decode_image(files.images[k]));
        index.push_back(k);
      } catch (const Error& e) {
        err << "image " << k + 1 << "/" << nf << " " << files.images[k].string() << ": cannot be read, skipped: "
            << e.what() << "\n";
        ++result.failed;
      }
    }
    if (images.empty()) continue;
    const std::vector<Prediction> preds = predictor.predict(images);
    for (std::size_t i = 0; i < preds.size(); ++i) {
      const Prediction& p = preds[i];
      const fs::path& path = files.images[index[i]];
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.1fms", p.speed.inference);
      if (cfg.verbose) {
        out << "image " << index[i] + 1 << "/" << nf << " " << path.string() << ": " << p.input_h << "x" << p.input_w
            << " " << verbose_counts(p, predictor.names()) << ms << "\n";
      }
      if (cfg.save) {
        data::Image canvas = images[i];
        draw_detections(canvas, p.boxes, cfg.annotate);
        if (!p.probs.empty()) draw_probabilities(canvas, p, predictor.names());
        save_annotated(result.save_dir, path, canvas);
      }
      if (cfg.save_txt && (!p.boxes.empty() || !p.probs.empty())) {
        const fs::path txt = result.save_dir / "labels" / (path.stem().string() + ".txt");
        append_labels(txt, p, predictor.names(), cfg.save_conf);
      }
      totals.pre += p.speed.preprocess;
      totals.infer += p.speed.inference;
      totals.post += p.speed.postprocess;
      totals.last_h = p.input_h;
      totals.last_w = p.input_w;
      result.detections += static_cast<std::int64_t>(p.boxes.size());
    }
    out.flush();
    totals.seen += static_cast<std::int64_t>(preds.size());
    result.images += static_cast<std::int64_t>(preds.size());
  }
  if (token.stop_requested()) {
    result.stop_signal = token.stop_signal();
    err << "predict: stopped after " << result.images << " of " << nf << " images" << std::endl;
  }
  if (totals.seen > 0) {
    const double n = static_cast<double>(totals.seen);
    char line[200];
    std::snprintf(line, sizeof(line),
                  "Speed: %.1fms preprocess, %.1fms inference, %.1fms postprocess per image at shape (%lld, 3, %d, %d)",
                  totals.pre / n, totals.infer / n, totals.post / n,
                  static_cast<long long>(std::min<std::int64_t>(cfg.batch, totals.seen)), totals.last_h, totals.last_w);
    out << line << "\n";
    out << "Forward: " << predictor.forward();
    if (cfg.predictor.forward == "auto") {
      out << " (forward=auto on this CPU: " << detail::cpu_isa_name() << ")";
    }
    out << "\n";
  }
  if (!result.save_dir.empty()) {
    const bool tty = ::isatty(STDOUT_FILENO) && &out == &std::cout;
    out << "Results saved to " << (tty ? "\033[1m" : "") << result.save_dir.string() << (tty ? "\033[0m" : "") << "\n";
    if (cfg.save_txt) {  // Ultralytics counts the folder's files ("label" unless more than one)
      for (const auto& e : fs::directory_iterator(result.save_dir / "labels"))
        result.label_files += e.path().extension() == ".txt";
      out << result.label_files << " label" << (result.label_files > 1 ? "s" : "") << " saved to "
          << (result.save_dir / "labels").string() << "\n";
    }
  }
  if (result.failed) err << "predict: " << result.failed << " file(s) could not be read (named above)" << std::endl;
  out.flush();
  return result;
}

}  // namespace yolotrain::predict
