// Ultralytics 8.4.117's segmentation losses and masks on one fixed batch, computed by Ultralytics
// itself (scripts/ultralytics84_seg_loss.py -> data/ultralytics84_seg_loss.json): the masks its
// Format builds from the batch's polygons (overlap and one per instance, mask_ratio 4),
// v8SegmentationLoss of the genuine coco128seg YOLOv8n-seg and YOLO11n-seg best.pt, and
// E2ELoss(model, v8SegmentationLoss) of YOLO26n-seg with its semantic term. Same image formula,
// models in train mode from the same files.
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <opencv2/core/version.hpp>

#include "yolotrain/data/masks.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/loss/segmentation_loss.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"
#include "ultralytics84_reference.hpp"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
namespace yl = yolotrain::loss;
namespace nn = yolotrain::nn;
namespace yd = yolotrain::data;
using nlohmann::json;
using yolotrain::test::check_against_ultralytics;
using yolotrain::test::train_mode;
using yolotrain::test::ultralytics84_image;

namespace {

const fs::path kSegWeights = yolotrain::test::ultralytics_weights();

const json& seg_reference() {
  static const json ref = json::parse(std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests" / "unit" / "loss" /
                                                    "data" / "ultralytics84_seg_loss.json"));
  return ref;
}

at::Tensor floats(const json& v) {  // a list, or a list of rows
  std::vector<float> flat;
  for (const auto& x : v) {
    if (x.is_array()) {
      for (const auto& y : x) flat.push_back(y.get<float>());
    } else {
      flat.push_back(x.get<float>());
    }
  }
  return at::tensor(flat);
}

// The batch as Ultralytics collated it (its boxes in its order) and its masks.
struct SegBatch {
  yl::Targets targets;
  yl::MaskTargets masks;
};

// The reference was drawn by OpenCV 4.10 (Debian 13's python3-opencv). cv::fillPoly's edges
// changed between releases (4.6, Debian 12's, fills a few edge pixels fewer on small curved
// polygons): equal there, within a pixel or two of each image's masks elsewhere.
bool same_masks(const at::Tensor& mine, const at::Tensor& ref) {
  const int64_t differ = (mine.to(at::kFloat) != ref).sum().item<int64_t>();
  INFO(differ << " mask pixels differ (OpenCV " << CV_VERSION << ")");
  return (CV_VERSION_MAJOR == 4 && CV_VERSION_MINOR == 10) ? differ == 0 : differ <= 2;
}

SegBatch batch_of(const json& r) {
  std::vector<int64_t> shape = r["masks_shape"].get<std::vector<int64_t>>();
  const at::Tensor masks = at::tensor(r["masks"].get<std::vector<int>>()).view(shape);
  const at::Tensor sem = at::tensor(r["sem_masks"].get<std::vector<int>>()).view({-1, shape[1], shape[2]});
  return {{floats(r["batch_idx"]), floats(r["cls"]).view({-1, 1}), floats(r["bboxes"]).view({-1, 4})},
          {masks.to(at::kFloat), sem.to(at::kFloat)}};
}

// Image i's polygons in pixels of the 320 x 320 input, as float32 (Ultralytics' segments).
std::vector<std::vector<float>> polygons_px(const json& image, int64_t h, int64_t w) {
  std::vector<std::vector<float>> out;
  for (const auto& row : image) {
    std::vector<float> p = row[1].get<std::vector<float>>();
    for (size_t k = 0; k < p.size(); ++k) p[k] *= static_cast<float>(k % 2 == 0 ? w : h);
    out.push_back(p);
  }
  return out;
}

bool have_seg_weights() {
  for (const char* f : {"coco128seg_yolov8n-seg", "coco128seg_yolo11n-seg", "coco128seg_yolo26n-seg"}) {
    if (!fs::exists(kSegWeights / f / "best.pt")) {
      WARN("skipped: " << (kSegWeights / f / "best.pt").string() << " is absent");
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("polygon masks equal Ultralytics 8.4's: overlap order, one per instance, semantic maps", "[loss][segment]") {
  const json& ref = seg_reference();
  const int64_t h = ref["imgsz"][0], w = ref["imgsz"][1], ratio = ref["mask_ratio"];
  const json& polygons = ref["polygons"];
  const SegBatch overlap = batch_of(ref["overlap"]), separate = batch_of(ref["separate"]);
  int64_t first = 0;
  for (size_t i = 0; i < polygons.size(); ++i) {
    INFO("image " << i);
    const auto px = polygons_px(polygons[i], h, w);
    const yd::OverlapMask om = yd::polygons_to_overlap_mask(h, w, px, ratio);
    CHECK(same_masks(om.mask, overlap.masks.masks[static_cast<int64_t>(i)]));
    std::vector<float> cls;
    for (int64_t k : om.order) cls.push_back(polygons[i][k][0].get<float>());
    const at::Tensor reordered = at::tensor(cls);
    CHECK(at::equal(reordered, overlap.targets.cls.view(-1).slice(0, first, first + static_cast<int64_t>(cls.size()))));
    CHECK(same_masks(yd::semantic_from_overlap(om.mask, reordered), overlap.masks.semantic[static_cast<int64_t>(i)]));
    const at::Tensor each = yd::polygons_to_masks(h, w, px, ratio);
    const int64_t n = static_cast<int64_t>(px.size());
    CHECK(same_masks(each, separate.masks.masks.slice(0, first, first + n)));
    std::vector<float> original;
    for (const auto& row : polygons[i]) original.push_back(row[0].get<float>());
    CHECK(same_masks(yd::semantic_from_masks(each, at::tensor(original)),
                     separate.masks.semantic[static_cast<int64_t>(i)]));
    first += n;
  }
}

TEST_CASE("v8SegmentationLoss of YOLOv8n-seg and YOLO11n-seg equals Ultralytics 8.4's on a fixed batch",
          "[loss][segment]") {
  if (!have_seg_weights()) return;
  const json& ref = seg_reference();
  const at::Tensor img = ultralytics84_image(ref["batch"], ref["imgsz"][0], ref["imgsz"][1]);
  for (const char* folder : {"coco128seg_yolov8n-seg", "coco128seg_yolo11n-seg"}) {
    nn::DetectionModel model = train_mode(folder);
    torch::NoGradGuard no_grad;
    const nn::HeadOutputs heads = model->forward_heads(img);
    yl::DetectionLossOptions options = yl::DetectionLossOptions::of(model);
    options.stal = true;  // 8.4's assigner
    for (const bool overlap : {true, false}) {
      for (const bool device_step : {false, true}) {  // the positives' path, and the static shapes CUDA runs
        INFO(folder << (overlap ? " overlap masks" : " one mask per instance") << ", device_step " << device_step);
        const SegBatch b = batch_of(ref[overlap ? "overlap" : "separate"]);
        options.device_step = device_step;
        const yl::SegmentationLoss loss(options, {}, overlap);
        check_against_ultralytics(loss({heads.one2many, heads.mask_coefficients, heads.proto, {}}, b.targets, b.masks),
                                  ref[overlap ? "overlap" : "separate"][folder]);
      }
    }
  }
}

TEST_CASE("YOLO26n-seg's E2E segmentation loss with its semantic term equals Ultralytics 8.4's", "[loss][segment]") {
  if (!have_seg_weights()) return;
  const json& ref = seg_reference();
  nn::DetectionModel model = train_mode("coco128seg_yolo26n-seg");
  torch::NoGradGuard no_grad;
  const nn::HeadOutputs heads =
      model->forward_heads(ultralytics84_image(ref["batch"], ref["imgsz"][0], ref["imgsz"][1]));
  REQUIRE(heads.semantic.defined());
  yl::DetectionLossOptions options = yl::DetectionLossOptions::of(model);
  options.stal = true;
  const yl::SegmentationOutputs o2m{heads.one2many, heads.mask_coefficients, heads.proto, heads.semantic};
  const yl::SegmentationOutputs o2o{heads.one2one, heads.one2one_mask_coefficients, heads.proto, heads.semantic};
  for (const bool overlap : {true, false}) {
    for (const bool device_step : {false, true}) {
      INFO((overlap ? "overlap masks" : "one mask per instance") << ", device_step " << device_step);
      const json& r = ref[overlap ? "overlap" : "separate"]["coco128seg_yolo26n-seg"];
      const SegBatch b = batch_of(ref[overlap ? "overlap" : "separate"]);
      options.device_step = device_step;
      yl::E2ESegmentationLoss loss(options, {}, overlap, ref["epochs"]);
      {
        INFO("one-to-many");
        check_against_ultralytics(loss.one2many()(o2m, b.targets, b.masks), r["one2many"]);
      }
      {
        INFO("one-to-one");
        check_against_ultralytics(loss.one2one()(o2o, b.targets, b.masks), r["one2one"]);
      }
      check_against_ultralytics(loss(o2m, o2o, b.targets, b.masks), r["e2e"]);
    }
  }
}
