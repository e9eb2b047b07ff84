#include <ATen/ATen.h>

#include "yolotrain/engine/validate.hpp"
#include "yolotrain/metrics/validator.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "test_support.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"

namespace en = yolotrain::engine;

TEST_CASE("the validation table has Ultralytics' header and rows", "[engine]") {
  en::ValidationReport r;
  r.names = {"person", "car", "dog"};
  r.images = 128;
  r.instances_per_class = {254, 0, 675};
  r.images_per_class = {61, 0, 12};
  r.metrics.mp = 0.64;
  r.metrics.mr = 0.537;
  r.metrics.map50 = 0.605;
  r.metrics.map = 0.446;
  r.metrics.ap_class_index = {0, 2};
  r.metrics.p = {0.8, 0.5};
  r.metrics.r = {0.6, 0.474};
  r.metrics.ap50 = {0.7, 0.51};
  r.metrics.ap = {0.5, 0.392};
  CHECK(r.table(false) ==
        "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)\n"
        "                   all        128        929       0.64      0.537      0.605      0.446\n");
  CHECK(r.table(true) ==
        r.table(false) +
            "                person         61        254        0.8        0.6        0.7        0.5\n"
            "                   dog         12        675        0.5      0.474       0.51      0.392\n");
}

TEST_CASE("images per class count each image once per class", "[engine]") {
  yolotrain::metrics::Validator v(3);
  const at::Tensor none = at::zeros({0, 6});
  v.update(none, at::tensor({0.f, 0.f, 2.f}), at::full({3, 4}, 0.5f), {64, 64}, {{64, 64}, std::nullopt});
  v.update(none, at::tensor({2.f}), at::full({1, 4}, 0.5f), {64, 64}, {{64, 64}, std::nullopt});
  v.update(none, at::zeros({0}), at::zeros({0, 4}), {64, 64}, {{64, 64}, std::nullopt});
  CHECK(v.nt_per_class() == std::vector<int64_t>{2, 0, 2});
  CHECK(v.nt_per_image() == std::vector<int64_t>{1, 0, 2});
}

TEST_CASE("validating a missing or foreign weights file says what is wrong", "[engine]") {
  en::TrainConfig cfg;
  cfg.model = "/nonexistent/best.ytckpt";
  CHECK_THROWS_WITH(en::validate(cfg), Catch::Contains("no such file"));
  CHECK_THROWS_WITH(en::val_config({"model=x.safetensors", "imgsz"}), Catch::Contains("key=value"));
  CHECK(en::val_config({"model=x.safetensors", "imgsz=320"}).imgsz == 320);
}

namespace {

// `yolo_train val` of one of Ultralytics' own bccd best.pt files (../shared/weights/ultralytics/
// <folder>/best.pt) at imgsz 320, batch 16; nothing (after saying so) when ../shared is absent.
std::optional<en::ValidationReport> validate_bccd_best(const std::string& folder, const yolotrain::test::TempDir& tmp,
                                                       std::vector<std::string> extra = {}) {
  namespace fs = std::filesystem;
  const fs::path shared(YOLOTRAIN_SHARED_DIR);
  const fs::path best = shared / "weights" / "ultralytics" / folder / "best.pt";
  const fs::path data = shared / "datasets" / "bccd" / "data.yaml";
  if (!fs::exists(best) || !fs::exists(data)) {
    WARN("skipped: " << best.string() << " or " << data.string() << " is absent");
    return std::nullopt;
  }
  std::vector<std::string> args = {"model=" + best.string(), "data=" + data.string(), "imgsz=320", "batch=16",
                                   "device=cpu", "workers=2", "project=" + tmp.path().string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const en::TrainConfig cfg = en::val_config(args);
  CHECK(cfg.imgsz == 320);
  CHECK(cfg.name == "val");
  return en::validate(cfg);
}

// PROVENANCE.md's table: all-class P, R, mAP50, mAP50-95, then each class's mAP50 (to 1e-3).
void check_figures(const en::ValidationReport& r, const std::vector<double>& all, const std::vector<double>& ap50) {
  CHECK(r.images == 87);
  CHECK(r.metrics.mean_results()[0] == Approx(all[0]).margin(1e-3));
  CHECK(r.metrics.mean_results()[1] == Approx(all[1]).margin(1e-3));
  CHECK(r.metrics.mean_results()[2] == Approx(all[2]).margin(1e-3));
  CHECK(r.metrics.mean_results()[3] == Approx(all[3]).margin(1e-3));
  REQUIRE(r.metrics.ap50.size() == 3);
  for (size_t c = 0; c < ap50.size(); ++c) CHECK(r.metrics.ap50[c] == Approx(ap50[c]).margin(1e-3));
}

}  // namespace

// PROVENANCE.md beside the weights: Ultralytics 8.2.82's own model.val(data=bccd, imgsz=320) of
// this best.pt (rectangular batches, conf 0.001, iou 0.7).
TEST_CASE("val of Ultralytics' own best.pt gives Ultralytics' own figures", "[engine]") {
  yolotrain::test::TempDir tmp;
  const auto report = validate_bccd_best("bccd_yolov8n", tmp, {"compat=8.3"});  // matched as 8.2 did
  if (!report) return;
  const en::ValidationReport& r = *report;
  CHECK(r.save_dir == tmp / "val");
  CHECK(r.plot_warnings.empty());
  CHECK(std::filesystem::exists(tmp / "val" / "confusion_matrix_normalized.png"));
  check_figures(r, {0.618231, 0.259789, 0.222283, 0.093575}, {0.296, 0.371});
}

// PROVENANCE.md beside the weights: Ultralytics 8.3.58's own model.val(data=bccd, imgsz=320,
// batch=16) of its YOLO11n best.pt (rectangular batches, conf 0.001, iou 0.7).
TEST_CASE("val of Ultralytics' own YOLO11n best.pt gives Ultralytics' own figures", "[engine][yolo11]") {
  yolotrain::test::TempDir tmp;
  const auto report = validate_bccd_best("bccd_yolo11n", tmp, {"plots=false", "compat=8.3"});
  if (!report) return;
  check_figures(*report, {0.020331365977790117, 0.6087833367011771, 0.14317890033098626, 0.05564960474403957},
                {0.251, 0.178, 0.0});
}

// PROVENANCE.md beside the weights: Ultralytics 8.4.117's own model.val(data=bccd, imgsz=320,
// batch=16) of its YOLO26n best.pt: the end-to-end head's top-k without NMS (conf 0.001).
TEST_CASE("val of Ultralytics' own YOLO26n best.pt gives Ultralytics' own figures", "[engine][yolo26]") {
  yolotrain::test::TempDir tmp;
  const auto report = validate_bccd_best("bccd_yolo26n", tmp, {"plots=false"});
  if (!report) return;
  check_figures(*report, {0.01682517315077296, 0.47334450665050104, 0.07133391758242459, 0.02360386292048812},
                {0.206, 0.00842, 0.0});
  CHECK(report->loss.empty());  // as Ultralytics' val: no loss outside training
}

// PROVENANCE.md: "With end2end=False (the one2many branch + NMS, same file): all P 0.017124,
// R 0.486986, mAP50 0.069207, mAP50-95 0.022157" (Ultralytics 8.4.117's own val).
TEST_CASE("val end2end=false of the YOLO26n best.pt: NMS over the one-to-many branch, as Ultralytics 8.4",
          "[engine][yolo26]") {
  yolotrain::test::TempDir tmp;
  const auto report = validate_bccd_best("bccd_yolo26n", tmp, {"plots=false", "end2end=false"});
  if (!report) return;
  CHECK(report->metrics.mean_results()[0] == Approx(0.017124).margin(1e-3));
  CHECK(report->metrics.mean_results()[1] == Approx(0.486986).margin(1e-3));
  CHECK(report->metrics.mean_results()[2] == Approx(0.069207).margin(1e-3));
  CHECK(report->metrics.mean_results()[3] == Approx(0.022157).margin(1e-3));
}

// Ultralytics 8.4.117's own model.val of the 8.2.82 bccd_yolov8n best.pt (same arguments; run here,
// ../shared/tools/ultralytics84): 8.4 matches in the network input, so the figures move.
TEST_CASE("val of the YOLOv8n best.pt with compat=8.4 gives Ultralytics 8.4's figures", "[engine]") {
  yolotrain::test::TempDir tmp;
  const auto report = validate_bccd_best("bccd_yolov8n", tmp, {"plots=false"});
  if (!report) return;
  check_figures(*report, {0.6165015668695898, 0.25151582882073276, 0.21154349502393002, 0.08348937105014212},
                {0.2657973806054303, 0.3688331044663598});
}

TEST_CASE("a segmentation validation's table has the Box and the Mask columns", "[engine][segment]") {
  en::ValidationReport r;
  r.names = {"a"};
  r.images = 25;
  r.instances_per_class = {112};
  r.metrics.mp = 0.5, r.metrics.mr = 0.25, r.metrics.map50 = 0.125, r.metrics.map = 0.0625;
  r.mask_metrics.emplace();
  r.mask_metrics->mp = 0.4, r.mask_metrics->mr = 0.2, r.mask_metrics->map50 = 0.1, r.mask_metrics->map = 0.05;
  CHECK(r.table(false) ==
        "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)     Mask(P          R"
        "      mAP50  mAP50-95)\n"
        "                   all         25        112        0.5       0.25      0.125     0.0625        0.4        0.2"
        "        0.1       0.05\n");
}

// PROVENANCE.md beside the weights: Ultralytics 8.4.117's own model.val(data=coco128-seg, imgsz=320,
// batch=16) of the three coco128seg best.pt gives 0 for every box and mask figure (10 epochs on 103
// images learned nothing detectable); yolotrain reads and validates them the same.
TEST_CASE("val of Ultralytics' coco128-seg checkpoints: masks validated, every figure 0 as Ultralytics'",
          "[engine][segment]") {
  namespace fs = std::filesystem;
  const fs::path shared(YOLOTRAIN_SHARED_DIR);
  const fs::path data = shared / "datasets" / "coco128-seg" / "data.yaml";
  for (const char* folder : {"coco128seg_yolov8n-seg", "coco128seg_yolo11n-seg", "coco128seg_yolo26n-seg"}) {
    const fs::path best = shared / "weights" / "ultralytics" / folder / "best.pt";
    if (!fs::exists(best) || !fs::exists(data)) {
      WARN("skipped: " << best.string() << " or " << data.string() << " is absent");
      continue;
    }
    INFO(folder);
    yolotrain::test::TempDir tmp;
    const en::TrainConfig cfg =
        en::val_config({"model=" + best.string(), "data=" + data.string(), "imgsz=320", "batch=16", "device=cpu",
                        "workers=2", "plots=false", "project=" + tmp.path().string()});
    const en::ValidationReport r = en::validate(cfg);
    CHECK(r.images == 25);
    REQUIRE(r.mask_metrics);
    for (double v : r.metrics.mean_results()) CHECK(v == Approx(0).margin(1e-3));
    for (double v : r.mask_metrics->mean_results()) CHECK(v == Approx(0).margin(1e-3));
    CHECK(r.table(false).find("Mask(P") != std::string::npos);
  }
}

namespace {

// `folder`/best.pt, a checkpoint Ultralytics' own trainer wrote, from $`env_var` or
// ../shared/weights/ultralytics (../shared's when both have it); empty when neither has it.
std::filesystem::path trained_checkpoint(const char* env_var, const std::string& folder) {
  namespace fs = std::filesystem;
  std::vector<fs::path> places;
  if (const char* dir = std::getenv(env_var)) places.push_back(fs::path(dir) / folder);
  places.push_back(fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics" / folder);
  fs::path best;
  for (const auto& p : places) {
    if (fs::exists(p / "best.pt")) best = p / "best.pt";
  }
  return best;
}

// Ultralytics' own figures for the checkpoint `best`: `name`.json beside it where its maker wrote one
// (../shared's checkpoints carry theirs: a checkpoint trained anew has another SHA-256), else the
// project's copy in tests/unit/engine/data.
nlohmann::json reference_figures(const std::filesystem::path& best, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path beside = best.parent_path() / (name + ".json");
  const fs::path own = fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/engine/data" / (name + ".json");
  return nlohmann::json::parse(std::ifstream(fs::exists(beside) ? beside : own));
}

// How close a validation's figures must be to Ultralytics': P and R (taken at the best F1's
// confidence, so a moved detection moves them most), and mAP50 and mAP50-95.
struct Margins {
  double pr = 1e-3, ap = 1e-3;
};

// A validation's figures against Ultralytics' own (scripts/ultralytics84_val.py's JSON): P, R,
// mAP50, mAP50-95, all and per class, to 1e-3 by default (the same images give the same figures).
void check_figures(const yolotrain::metrics::DetMetrics& m, const nlohmann::json& f, Margins margin = {}) {
  for (int k = 0; k < 4; ++k) {
    CHECK(m.mean_results()[k] == Approx(f["all"][k].get<double>()).margin(k < 2 ? margin.pr : margin.ap));
  }
  REQUIRE(m.ap50.size() == f["ap50"].size());
  for (size_t c = 0; c < m.ap50.size(); ++c) {
    CHECK(m.p[c] == Approx(f["p"][c].get<double>()).margin(margin.pr));
    CHECK(m.r[c] == Approx(f["r"][c].get<double>()).margin(margin.pr));
    CHECK(m.ap50[c] == Approx(f["ap50"][c].get<double>()).margin(margin.ap));
    CHECK(m.ap[c] == Approx(f["ap"][c].get<double>()).margin(margin.ap));
  }
}

// SHA-256 over the validation images of the generated set at `data` (file names and bytes, in name order).
std::string val_images_sha256(const std::filesystem::path& data) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(data.parent_path() / "images" / "val")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) all += f.filename().string() + '\n' + yolotrain::test::slurp(f);
  return yolotrain::lifecycle::sha256_hex(all);
}

// The margins to hold a generated set's validation to Ultralytics' figures: 1e-3 when its images
// are the bytes Ultralytics validated (data/generated_sets_sha256.json: written with Debian 12's
// OpenCV 4.6); otherwise, said, 0.03 for mAP50 and mAP50-95 and 0.1 for P and R: OpenCV 4.10
// (Debian 13) fills the shapes' polygons a pixel differently at some vertices, a few detections
// move, and the figures with them (seen: mAP 0.015, P and R 0.07).
Margins generated_set_margins(const std::filesystem::path& data, const std::string& set) {
  namespace fs = std::filesystem;
  const nlohmann::json known = nlohmann::json::parse(
      std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/engine/data/generated_sets_sha256.json"));
  const std::string sha = val_images_sha256(data);
  if (sha == known[set].get<std::string>()) return {};
  WARN(set << "'s validation images here (SHA-256 " << sha << ") are not the ones Ultralytics validated ("
           << known[set].get<std::string>() << "): this OpenCV draws the polygons' edges differently; "
           << "mAP is held to 0.03 and P and R to 0.1 instead of 1e-3");
  return {0.1, 0.03};
}

}  // namespace

// Ultralytics 8.4.117's own validation (scripts/ultralytics84_val.py -> data/
// ultralytics84_shapes_seg_<model>.json) of a checkpoint its own trainer wrote on shapes-seg
// (scripts/ultralytics84_train.py, 30 epochs at 160 px): box and mask P, R, mAP50, mAP50-95, all
// and per class, to 1e-3. The checkpoints are Ultralytics' files and stay out of the project: the
// test reads shapesseg_<model>/best.pt from $YOLOTRAIN_SEG_WEIGHTS or ../shared/weights/ultralytics
// and checks its SHA-256 against the reference's; it says so and skips when neither has it.
TEST_CASE("val of Ultralytics' own shapes-seg checkpoints gives Ultralytics' own box and mask figures",
          "[engine][segment]") {
  namespace fs = std::filesystem;
  const fs::path data = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / "shapes-seg" / "data.yaml";
  for (const std::string model : {"yolo11n-seg", "yolov8n-seg", "yolo26n-seg"}) {
    const fs::path ref_file = fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/engine/data" /
                              ("ultralytics84_shapes_seg_" + model + ".json");
    if (!fs::exists(ref_file)) continue;  // no reference made for this model yet
    const fs::path best = trained_checkpoint("YOLOTRAIN_SEG_WEIGHTS", "shapesseg_" + model);
    if (best.empty() || !fs::exists(data)) {
      WARN("skipped: no shapesseg_" << model << "/best.pt in $YOLOTRAIN_SEG_WEIGHTS nor "
                                    << (fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics").string()
                                    << " (make it with scripts/ultralytics84_train.py), or no " << data.string());
      continue;
    }
    INFO(model << " " << best.string());
    const nlohmann::json ref = reference_figures(best, "ultralytics84_shapes_seg_" + model);
    REQUIRE(yolotrain::lifecycle::sha256_hex(yolotrain::test::slurp(best)) == ref["checkpoint_sha256"]);
    yolotrain::test::TempDir tmp;
    const en::ValidationReport r = en::validate(en::val_config(
        {"model=" + best.string(), "data=" + data.string(), "imgsz=160", "batch=16", "device=cpu", "workers=2",
         "plots=false", "project=" + tmp.path().string()}));
    REQUIRE(r.mask_metrics);
    {
      INFO("box");
      check_figures(r.metrics, ref["box"]);
    }
    {
      INFO("mask");
      check_figures(*r.mask_metrics, ref["mask"]);
    }
  }
}

TEST_CASE("val of a segmentation model on box labels says it needs polygons", "[engine][segment]") {
  namespace fs = std::filesystem;
  const fs::path best = fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics/coco128seg_yolo11n-seg/best.pt";
  const fs::path data = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets/coco128/data.yaml";
  if (!fs::exists(best) || !fs::exists(data)) {
    WARN("skipped: " << best.string() << " or " << data.string() << " is absent");
    return;
  }
  yolotrain::test::TempDir tmp;
  const en::TrainConfig cfg = en::val_config({"model=" + best.string(), "data=" + data.string(), "imgsz=160",
                                              "plots=false", "project=" + tmp.path().string()});
  CHECK_THROWS_WITH(en::validate(cfg),
                    Catch::Contains("needs polygon labels") && Catch::Contains("112 boxes and 0 polygons"));
}

namespace {

// `yolo_train val` of the -pose checkpoint `folder`/best.pt (from $YOLOTRAIN_POSE_WEIGHTS or ../shared/
// weights/ultralytics) on `data` at `imgsz` against Ultralytics' own figures in data/`reference`.json: box
// and pose, all and per class, to 1e-3; the checkpoint's SHA-256 checked. Skips saying so without it.
void check_pose_checkpoint(const std::filesystem::path& data, const std::string& imgsz, const std::string& folder,
                           const std::string& reference, const std::filesystem::path& project,
                           Margins margin = {}) {
  namespace fs = std::filesystem;
  const fs::path ref_file = fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/engine/data" / (reference + ".json");
  if (!fs::exists(ref_file)) return;  // no reference made for this model yet
  const fs::path best = trained_checkpoint("YOLOTRAIN_POSE_WEIGHTS", folder);
  if (best.empty()) {
    WARN("skipped: no " << folder << "/best.pt in $YOLOTRAIN_POSE_WEIGHTS nor "
                        << (fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics").string()
                        << " (make it with scripts/ultralytics84_train.py)");
    return;
  }
  INFO(folder << " " << best.string());
  const nlohmann::json ref = reference_figures(best, reference);
  REQUIRE(yolotrain::lifecycle::sha256_hex(yolotrain::test::slurp(best)) == ref["checkpoint_sha256"]);
  const en::ValidationReport r = en::validate(
      en::val_config({"model=" + best.string(), "data=" + data.string(), "imgsz=" + imgsz, "batch=16", "device=cpu",
                      "workers=2", "plots=false", "project=" + project.string()}));
  REQUIRE(r.pose_metrics);
  {
    INFO("box");
    check_figures(r.metrics, ref["box"], margin);
  }
  {
    INFO("pose");
    check_figures(*r.pose_metrics, ref["pose"], margin);
  }
}

}  // namespace

// Ultralytics 8.4.117's own validation (scripts/ultralytics84_val.py -> data/
// ultralytics84_shapes_pose_<model>.json) of -pose models its own trainer wrote on the built-in
// shapes-pose (20 epochs at 160 px): box and pose P, R, mAP50, mAP50-95 (OKS, sigmas 1/5), all and
// per class, to 1e-3. The checkpoints stay out of the project: shapespose_<model>/best.pt from
// $YOLOTRAIN_POSE_WEIGHTS or ../shared/weights/ultralytics, its SHA-256 checked; skipped otherwise.
// The dataset is written here by the generator, whose bytes are a function of its options.
TEST_CASE("val of Ultralytics' own shapes-pose checkpoints gives Ultralytics' own box and pose figures",
          "[engine][pose]") {
  namespace fs = std::filesystem;
  yolotrain::test::TempDir tmp;
  yolotrain::data::ShapesOptions shapes;
  shapes.keypoints = true;  // data=shapes-pose's set: seed 0, 256 + 64 images of 320 px
  const fs::path data = yolotrain::data::write_shapes_dataset(tmp / "shapes-pose", shapes);
  const Margins margin = generated_set_margins(data, "shapes-pose");
  for (const std::string model : {"yolo11n-pose", "yolov8n-pose", "yolo26n-pose"}) {
    check_pose_checkpoint(data, "160", "shapespose_" + model, "ultralytics84_shapes_pose_" + model, tmp / model,
                          margin);
  }
}

// The same on real photographs with COCO's 17 keypoints: -pose models Ultralytics' own trainer wrote on
// ../shared/datasets/coco8-pose (scripts/ultralytics84_train.py at 320 px from scratch, many epochs over
// its 4 training images), validated on those 4 images (a data.yaml whose val is the train split: the
// models learned them; the 4 val images would give zeros) at 320 by Ultralytics (-> data/
// ultralytics84_coco8_pose_<model>.json) and here: box and pose figures to 1e-3. The checkpoints:
// coco8pose_<model>/best.pt from $YOLOTRAIN_POSE_WEIGHTS or ../shared/weights/ultralytics.
TEST_CASE("val of Ultralytics' own coco8-pose checkpoints gives Ultralytics' own box and pose figures",
          "[engine][pose]") {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / "coco8-pose";
  if (!fs::exists(root / "data.yaml")) {
    WARN("skipped: no " << (root / "data.yaml").string());
    return;
  }
  yolotrain::test::TempDir tmp;
  const fs::path data = tmp / "coco8-pose-train.yaml";
  std::ofstream(data) << "path: " << root.string() << "\ntrain: images/train\nval: images/train\nnc: 1\n"
                      << "names:\n  0: person\nkpt_shape: [17, 3]\n"
                      << "flip_idx: [0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15]\n";
  for (const std::string model : {"yolo11n-pose", "yolov8n-pose", "yolo26n-pose"}) {
    check_pose_checkpoint(data, "320", "coco8pose_" + model, "ultralytics84_coco8_pose_" + model, tmp / model);
  }
}

// `yolo_train val` of -cls checkpoints trained by Ultralytics 8.4.117's own trainer on shapes-cls
// (scripts/ultralytics84_train.py, 20 epochs at 64 px with auto_augment=None erasing=0 scale=0.2)
// against its own standalone validation (scripts/ultralytics84_val.py) at imgsz 64 (the images'
// size: the centre crop alone) and 32 (PIL's antialiased resize first): top-1 and top-5 to 1e-3.
// The checkpoints stay out of the project: shapescls_<model>/best.pt from $YOLOTRAIN_CLS_WEIGHTS
// or ../shared/weights/ultralytics, their SHA-256 checked; skipped otherwise.
TEST_CASE("val of Ultralytics' own shapes-cls checkpoints gives Ultralytics' own top-1 and top-5",
          "[engine][classify]") {
  namespace fs = std::filesystem;
  yolotrain::test::TempDir tmp;
  const fs::path data =
      yolotrain::data::write_shapes_dataset(tmp / "shapes-cls", yolotrain::data::shapes_cls_options());
  for (const std::string model : {"yolov8n-cls", "yolo11n-cls", "yolo26n-cls"}) {
    const fs::path best = trained_checkpoint("YOLOTRAIN_CLS_WEIGHTS", "shapescls_" + model);
    if (best.empty()) {
      WARN("skipped: no shapescls_" << model << "/best.pt in $YOLOTRAIN_CLS_WEIGHTS nor "
                                    << (fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics").string()
                                    << " (make it with scripts/ultralytics84_train.py)");
      continue;
    }
    INFO(model << " " << best.string());
    const nlohmann::json ref = reference_figures(best, "ultralytics84_shapes_cls_" + model);
    REQUIRE(yolotrain::lifecycle::sha256_hex(yolotrain::test::slurp(best)) == ref["checkpoint_sha256"]);
    for (const std::string imgsz : {"64", "32"}) {
      INFO("imgsz " << imgsz);
      const en::ValidationReport r = en::validate(en::val_config(
          {"model=" + best.string(), "data=" + data.string(), "imgsz=" + imgsz, "batch=16", "device=cpu",
           "workers=2", "plots=false", "project=" + (tmp / model).string()}));
      REQUIRE(r.classify);
      CHECK(r.images == 128);
      CHECK(r.classify->top1 == Approx(ref["imgsz"][imgsz]["top1"].get<double>()).margin(1e-3));
      CHECK(r.classify->top5 == Approx(ref["imgsz"][imgsz]["top5"].get<double>()).margin(1e-3));
    }
  }
}

// Ultralytics 8.4.117's own validation (scripts/ultralytics84_val.py -> data/
// ultralytics84_shapes_obb_<model>.json) of -obb models its own trainer wrote on the built-in shapes-obb
// (scripts/ultralytics84_train.py at 160 px: yolo11n-obb 20 epochs, yolov8n-obb and yolo26n-obb 10):
// P, R, mAP50, mAP50-95 by ProbIoU after rotated NMS, all and per class, to 1e-3. The checkpoints stay
// out of the project: shapesobb_<model>/best.pt from $YOLOTRAIN_OBB_WEIGHTS or ../shared/weights/
// ultralytics, its SHA-256 checked; skipped otherwise.
TEST_CASE("val of Ultralytics' own shapes-obb checkpoints gives Ultralytics' own figures", "[engine][obb]") {
  namespace fs = std::filesystem;
  yolotrain::test::TempDir tmp;
  const fs::path data =
      yolotrain::data::write_shapes_dataset(tmp / "shapes-obb", yolotrain::data::shapes_obb_options());
  const Margins margin = generated_set_margins(data, "shapes-obb");
  for (const std::string model : {"yolo11n-obb", "yolov8n-obb", "yolo26n-obb"}) {
    const fs::path best = trained_checkpoint("YOLOTRAIN_OBB_WEIGHTS", "shapesobb_" + model);
    if (best.empty()) {
      WARN("skipped: no shapesobb_" << model << "/best.pt in $YOLOTRAIN_OBB_WEIGHTS nor "
                                    << (fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics").string()
                                    << " (make it with scripts/ultralytics84_train.py)");
      continue;
    }
    INFO(model << " " << best.string());
    const nlohmann::json ref = reference_figures(best, "ultralytics84_shapes_obb_" + model);
    REQUIRE(yolotrain::lifecycle::sha256_hex(yolotrain::test::slurp(best)) == ref["checkpoint_sha256"]);
    const en::ValidationReport r = en::validate(en::val_config(
        {"model=" + best.string(), "data=" + data.string(), "imgsz=160", "batch=16", "device=cpu", "workers=2",
         "plots=false", "project=" + (tmp / model).string()}));
    CHECK(r.images == 64);
    CHECK_FALSE(r.mask_metrics);
    check_figures(r.metrics, ref["box"], margin);
  }
}
