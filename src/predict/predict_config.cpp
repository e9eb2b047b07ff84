#include "yolotrain/predict/predict_config.hpp"

#include "../engine/arg_values.hpp"

namespace yolotrain::predict {

namespace {

using namespace engine::args;  // NOLINT: the value parsers
using C = PredictConfig;

const ArgTable<C>& args_table() {
  static const ArgTable<C> table = {
      {"model",
       {"", "weights: .pt (Ultralytics), .ytckpt or .safetensors", [](C& c, const std::string& v) { c.model = v; }}},
      {"source",
       {"", "an image, a folder, a glob or a .txt list of paths", [](C& c, const std::string& v) { c.source = v; }}},
      {"imgsz",
       {"640", "input size: N, or H,W (rounded up to multiples of 32)",
        [](C& c, const std::string& v) {
          const auto hw = int_list("imgsz", v);
          if (hw.size() > 2 || hw[0] < 32 || hw.back() < 32) bad("imgsz", v, "expected N or H,W of at least 32");
          c.predictor.imgsz_h = hw[0];
          c.predictor.imgsz_w = hw.back();
        }}},
      {"conf",
       {"0.25", "confidence threshold",
        [](C& c, const std::string& v) { c.predictor.conf = to_double("conf", v, 0, 1); }}},
      {"iou",
       {"0.7", "NMS IoU threshold", [](C& c, const std::string& v) { c.predictor.iou = to_double("iou", v, 0, 1); }}},
      {"max_det",
       {"300", "detections per image at most",
        [](C& c, const std::string& v) { c.predictor.max_det = to_int("max_det", v, 1, 1 << 20); }}},
      {"classes",
       {"None", "keep only these classes (e.g. 0,2)",
        [](C& c, const std::string& v) {
          if (is_none(v))
            c.predictor.classes.reset();
          else
            c.predictor.classes = int_list("classes", v);
        }}},
      {"agnostic_nms",
       {"false", "NMS across classes",
        [](C& c, const std::string& v) { c.predictor.agnostic_nms = to_bool("agnostic_nms", v); }}},
      {"end2end",
       {"true", "an end-to-end head (YOLO26): its top-k (true) or NMS over the one-to-many branch (false)",
        [](C& c, const std::string& v) { c.predictor.end2end = to_bool("end2end", v); }}},
      {"retina_masks",
       {"false", "segmentation: masks computed at the image's resolution instead of the network input's",
        [](C& c, const std::string& v) { c.predictor.retina_masks = to_bool("retina_masks", v); }}},
      {"device",
       {"", "cpu, cuda, cuda:N or N; empty: CUDA when usable",
        [](C& c, const std::string& v) { c.predictor.device = is_none(v) ? "" : v; }}},
      {"half",
       {"false", "float16 inference (CUDA)",
        [](C& c, const std::string& v) { c.predictor.half = to_bool("half", v); }}},
      {"fuse",
       {"true", "fold BatchNorm into the convolutions",
        [](C& c, const std::string& v) { c.predictor.fuse = to_bool("fuse", v); }}},
      {"forward",
       {"auto", "CPU forward: auto, libtorch, onednn[-nchw16c|-nchw8c|-nhwc][-bf16]",
        [](C& c, const std::string& v) { c.predictor.forward = v; }}},
      {"batch",
       {"1", "images per forward pass", [](C& c, const std::string& v) { c.batch = to_int("batch", v, 1, 1024); }}},
      {"project", {"runs/detect", "folder of the run folders", [](C& c, const std::string& v) { c.project = v; }}},
      {"name",
       {"predict", "run folder name (predict2, predict3, ... when it exists)",
        [](C& c, const std::string& v) { c.name = v; }}},
      {"exist_ok",
       {"false", "write into an existing run folder",
        [](C& c, const std::string& v) { c.exist_ok = to_bool("exist_ok", v); }}},
      {"save", {"true", "write annotated images", [](C& c, const std::string& v) { c.save = to_bool("save", v); }}},
      {"save_txt",
       {"false", "write labels/<stem>.txt (cls xc yc w h, normalised)",
        [](C& c, const std::string& v) { c.save_txt = to_bool("save_txt", v); }}},
      {"save_conf",
       {"false", "append the confidence to each txt row",
        [](C& c, const std::string& v) { c.save_conf = to_bool("save_conf", v); }}},
      {"line_width",
       {"None", "box line width in pixels; None: from the image size",
        [](C& c, const std::string& v) {
          c.annotate.line_width = is_none(v) ? 0 : static_cast<int>(to_int("line_width", v, 1, 100));
        }}},
      {"show_labels",
       {"true", "draw class names",
        [](C& c, const std::string& v) { c.annotate.show_labels = to_bool("show_labels", v); }}},
      {"show_conf",
       {"true", "draw confidences",
        [](C& c, const std::string& v) { c.annotate.show_conf = to_bool("show_conf", v); }}},
      {"verbose",
       {"true", "one line per image", [](C& c, const std::string& v) { c.verbose = to_bool("verbose", v); }}},
      {"threads",
       {"0", "intra-op threads; 0: every core",
        [](C& c, const std::string& v) { c.threads = static_cast<int>(to_int("threads", v, 0, 1024)); }}},
  };
  return table;
}

}  // namespace

PredictConfig PredictConfig::from_args(const std::vector<std::string>& args) {
  PredictConfig cfg;
  apply("predict", args_table(), args, cfg);
  if (cfg.model.empty()) throw ConfigError("predict needs model= (a .pt, .ytckpt or .safetensors file)");
  if (cfg.source.empty()) throw ConfigError("predict needs source= (an image, a folder, a glob or a .txt list)");
  return cfg;
}

std::vector<std::array<std::string, 3>> PredictConfig::describe() { return engine::args::describe(args_table()); }

}  // namespace yolotrain::predict
