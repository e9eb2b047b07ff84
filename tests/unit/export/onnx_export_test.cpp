#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "export_test_support.hpp"
#include "onnxruntime_runner.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/export/export_config.hpp"
#include "yolotrain/export/onnx_export.hpp"
#include "yolotrain/export/safetensors_export.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/predict/preprocess.hpp"

#include "catch.hpp"

#include <fstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using yolotrain::exporter::OnnxExportOptions;
using yolotrain::exporter::OnnxMetadata;
using yolotrain::test::slurp;
using yolotrain::test::TempDir;
using namespace yolotrain::test::export_support;  // NOLINT: the shared models, images and NMS

namespace {

struct Case {
  std::string model;  // "nc80" (random weights, coco8 images) or "bccd" (trained, bccd images)
  std::int64_t imgsz;
  int opset;
  bool dynamic;
};

std::string describe(const Case& c) {
  return c.model + " imgsz " + std::to_string(c.imgsz) + " opset " + std::to_string(c.opset) +
         (c.dynamic ? " dynamic" : " static");
}

}  // namespace

TEST_CASE("ONNX Runtime runs the exported graph as libtorch runs the model: raw output and detections", "[export]") {
  if (auto why = yolotrain::testing::onnxruntime_missing()) {
    WARN("skipped: " << *why);
    return;
  }
  if (!fs::exists(kBest) || !fs::exists(kShared / "datasets" / "coco8")) {
    WARN("skipped: " << kBest.string() << " or ../shared/datasets/coco8 is absent");
    return;
  }
  TempDir tmp;
  auto nc80 = random_model(80);
  auto bccd = model_of(kBest);
  const auto coco_images = images_of("coco8", 2);
  const auto bccd_images = images_of("bccd", 2);
  std::size_t compared_boxes = 0;
  for (const std::string name : {"nc80", "bccd"}) {
    for (std::int64_t imgsz : {640, 320}) {
      for (int opset : {12, 17}) {
        for (bool dynamic : {false, true}) {
          const Case c{name, imgsz, opset, dynamic};
          INFO(describe(c));
          auto& model = name == "nc80" ? nc80 : bccd;
          OnnxExportOptions o;
          o.imgsz_h = o.imgsz_w = imgsz;
          o.opset = opset;
          o.dynamic = dynamic;
          const fs::path path = tmp.path() / (name + ".onnx");
          std::ofstream(path, std::ios::binary)
              << yolotrain::exporter::onnx_model(*model, o, {"test", "", model->names()});
          // A dynamic graph runs on another batch and shape than it was exported at.
          const auto& images = name == "nc80" ? coco_images : bccd_images;
          const at::Tensor x = dynamic ? input_of(images, imgsz - 64, imgsz + 96) : input_of({images[0]}, imgsz, imgsz);
          at::Tensor expected;
          {
            c10::InferenceMode guard;
            expected = model->predict(x);
          }
          const auto ort = yolotrain::testing::run_onnxruntime(path, x, tmp.path());
          CHECK(ort.input_name == "images");
          CHECK(ort.output_name == "output0");
          const Agreement agree = compare(expected, ort.output);
          UNSCOPED_INFO(describe(c) << ": max abs diff " << agree.diff << " of range " << agree.range << ", "
                                    << agree.boxes << " detections");
          CHECK(agree.diff <= 1e-4 * agree.range);
          CHECK(agree.same_detections);
          compared_boxes += agree.boxes;
        }
      }
    }
  }
  CHECK(compared_boxes > 50);  // the trained model finds cells: the comparison is not of empty lists
}

TEST_CASE("ONNX Runtime runs an exported YOLO11n as libtorch runs it (attention included)", "[export][yolo11]") {
  if (auto why = yolotrain::testing::onnxruntime_missing()) {
    WARN("skipped: " << *why);
    return;
  }
  if (!fs::exists(kYolo11Best)) {
    WARN("skipped: " << kYolo11Best.string() << " is absent");
    return;
  }
  TempDir tmp;
  auto random11 = random_model(80, "yolo11n.yaml");
  auto bccd11 = model_of(kYolo11Best);
  const auto images = images_of("bccd", 2);
  for (const std::string name : {"yolo11n nc80", "bccd_yolo11n"}) {
    auto& model = name == "bccd_yolo11n" ? bccd11 : random11;
    for (const auto& [imgsz, opset, dynamic] : std::vector<std::tuple<std::int64_t, int, bool>>{
             {640, 17, false}, {320, 12, false}, {320, 17, true}}) {
      const Case c{name, imgsz, opset, dynamic};
      INFO(describe(c));
      OnnxExportOptions o;
      o.imgsz_h = o.imgsz_w = imgsz;
      o.opset = opset;
      o.dynamic = dynamic;
      const fs::path path = tmp.path() / "yolo11.onnx";
      std::ofstream(path, std::ios::binary) << yolotrain::exporter::onnx_model(*model, o, {"test", "", model->names()});
      const at::Tensor x = dynamic ? input_of(images, imgsz - 64, imgsz + 96) : input_of({images[0]}, imgsz, imgsz);
      at::Tensor expected;
      {
        c10::InferenceMode guard;
        expected = model->predict(x);
      }
      const Agreement agree = compare(expected, yolotrain::testing::run_onnxruntime(path, x, tmp.path()).output);
      UNSCOPED_INFO(describe(c) << ": max abs diff " << agree.diff << " of range " << agree.range << ", "
                                << agree.boxes << " detections");
      CHECK(agree.diff <= 1e-4 * agree.range);
      CHECK(agree.same_detections);
    }
  }
}

TEST_CASE("ONNX export: Ultralytics' contract, metadata and the same bytes for the same weights", "[export]") {
  auto model = random_model(3);
  OnnxExportOptions o;
  o.imgsz_h = 320;
  o.imgsz_w = 256;
  const OnnxMetadata meta{"yolotrain YOLOv8n model", "2026-01-02T03:04:05", {"cat", "it's", "a\\b"}};
  const std::string a = yolotrain::exporter::onnx_model(*model, o, meta);
  CHECK(yolotrain::exporter::onnx_model(*model, o, meta) == a);
  auto again = random_model(3);
  CHECK(yolotrain::exporter::onnx_model(*again, o, meta) == a);  // built anew from the same weights
  // Metadata as Python's str() writes it, which Ultralytics' AutoBackend evaluates.
  CHECK(a.find("{0: 'cat', 1: \"it's\", 2: 'a\\\\b'}") != std::string::npos);
  CHECK(a.find("[320, 256]") != std::string::npos);
  for (const char* key : {"description", "author", "date", "version", "stride", "task", "batch", "imgsz", "names"}) {
    CHECK(a.find(key) != std::string::npos);
  }
  o.opset = 11;
  CHECK_THROWS_WITH(yolotrain::exporter::onnx_model(*model, o, meta), Catch::Contains("opset 11 is not supported"));
  o.opset = 17;
  o.imgsz_h = 100;
  CHECK_THROWS_WITH(yolotrain::exporter::onnx_model(*model, o, meta), Catch::Contains("multiples of the stride 32"));
  yolotrain::nn::DetectionModel unfused(yolotrain::nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  unfused->eval();
  o.imgsz_h = 320;
  CHECK_THROWS_WITH(yolotrain::exporter::onnx_model(*unfused, o, meta), Catch::Contains("must be fused"));
}

TEST_CASE("ONNX's own Python checker (full check, with shape inference) accepts the export", "[export]") {
  if (std::system("/usr/bin/python3 -c 'import onnx' > /dev/null 2>&1") != 0) {
    WARN("skipped: python3-onnx is not installed (apt-get install python3-onnx)");
    return;
  }
  TempDir tmp;
  auto model = random_model(80);
  for (bool dynamic : {false, true}) {
    for (int opset : {12, 17}) {
      OnnxExportOptions o;
      o.dynamic = dynamic;
      o.opset = opset;
      const fs::path path = tmp.path() / "m.onnx";
      std::ofstream(path, std::ios::binary) << yolotrain::exporter::onnx_model(*model, o, {"d", "", model->names()});
      const std::string cmd =
          "/usr/bin/python3 -c \"import onnx, sys; m = onnx.load(sys.argv[1]); "
          "onnx.checker.check_model(m, full_check=True); "
          "i = onnx.shape_inference.infer_shapes(m, strict_mode=True); print(i.graph.output[0])\" " +
          path.string() + " > " + (tmp.path() / "py.txt").string() + " 2>&1";
      INFO("opset " << opset << (dynamic ? " dynamic" : " static") << ": " << slurp(tmp.path() / "py.txt"));
      CHECK(std::system(cmd.c_str()) == 0);
    }
  }
}

TEST_CASE("export_onnx from weights files: rounded imgsz, bad files named, the previous .onnx kept", "[export]") {
  TempDir tmp;
  yolotrain::nn::DetectionModel model(yolotrain::nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  const fs::path weights = tmp.path() / "w.safetensors";
  yolotrain::nn::write_safetensors(weights, yolotrain::nn::state_dict(*model), {});
  OnnxExportOptions o;
  o.imgsz_h = 321;
  o.imgsz_w = 320;
  const fs::path out = tmp.path() / "w.onnx";
  const auto r = yolotrain::exporter::export_onnx(weights, out, o);
  CHECK(r.imgsz_h == 352);
  CHECK(r.imgsz_w == 320);
  REQUIRE(r.warnings.size() == 1);
  CHECK_THAT(r.warnings[0], Catch::Contains("imgsz=321 must be a multiple of the max stride 32, updating to 352"));
  CHECK(r.bytes == fs::file_size(out));
  const std::string first = slurp(out);
  // The same file exported again: the same bytes (the date comes from the weights file).
  yolotrain::exporter::export_onnx(weights, out, o);
  CHECK(slurp(out) == first);

  const fs::path text = tmp.path() / "notes.pt";
  std::ofstream(text) << "not a model";
  CHECK_THROWS_WITH(yolotrain::exporter::export_onnx(text, out, o), Catch::Contains("notes.pt"));
  CHECK_THROWS_WITH(yolotrain::exporter::export_onnx(tmp.path() / "missing.ytckpt", out, o),
                    Catch::Contains("no such file"));
  CHECK(slurp(out) == first);  // failures leave the previous export alone
  std::ofstream(tmp.path() / "file") << "x";
  CHECK_THROWS_WITH(yolotrain::exporter::export_onnx(weights, tmp.path() / "file" / "w.onnx", o),
                    Catch::Contains("file/w.onnx"));
  o.half = true;
  const auto h = yolotrain::exporter::export_onnx(weights, out, o);
  CHECK_THAT(h.warnings.front(), Catch::Contains("half=true"));
}

namespace {

const fs::path kYolo26Best = kShared / "weights" / "ultralytics" / "bccd_yolo26n" / "best.pt";

// The end-to-end output's detections above `conf`: each of libtorch's rows has a row of ONNX
// Runtime's with the same class, its score within 1e-4 and its corners within `tol` px (the
// order of near-equal scores may differ between the two).
std::size_t unmatched_rows(const at::Tensor& expected, const at::Tensor& got, double conf, double tol) {
  std::size_t missing = 0;
  for (int64_t b = 0; b < expected.size(0); ++b) {
    for (int64_t i = 0; i < expected.size(1); ++i) {
      const at::Tensor row = expected[b][i];
      if (row[4].item<double>() < conf) continue;
      const at::Tensor close = ((got[b].slice(1, 0, 4) - row.slice(0, 0, 4)).abs().amax(1) <= tol) &
                               ((got[b].select(1, 4) - row[4]).abs() <= 1e-4) & (got[b].select(1, 5) == row[5]);
      if (!close.any().item<bool>()) ++missing;
    }
  }
  return missing;
}

}  // namespace

TEST_CASE("YOLO26 to ONNX: Ultralytics 8.4's (N, 300, 6) end-to-end output and the NMS head, as ONNX Runtime runs them",
          "[export][yolo26]") {
  if (auto why = yolotrain::testing::onnxruntime_missing()) {
    WARN("skipped: " << *why);
    return;
  }
  if (!fs::exists(kYolo26Best)) {
    WARN("skipped: " << kYolo26Best.string() << " is absent");
    return;
  }
  TempDir tmp;
  const auto images = images_of("bccd", 2);
  for (const bool end2end : {true, false}) {
    for (const auto& [imgsz, opset, dynamic] :
         std::vector<std::tuple<std::int64_t, int, bool>>{{320, 17, false}, {320, 12, false}, {320, 17, true}}) {
      INFO("end2end " << end2end << ", imgsz " << imgsz << ", opset " << opset << ", dynamic " << dynamic);
      OnnxExportOptions o;
      o.imgsz_h = o.imgsz_w = imgsz;
      o.opset = opset;
      o.dynamic = dynamic;
      o.end2end = end2end;
      const fs::path path = tmp.path() / "yolo26.onnx";
      const auto report = yolotrain::exporter::export_onnx(kYolo26Best, path, o);
      auto model = model_of(kYolo26Best);
      model->head()->set_end2end(end2end);
      const at::Tensor x = dynamic ? input_of(images, imgsz - 64, imgsz + 96) : input_of({images[0]}, imgsz, imgsz);
      at::Tensor expected;
      {
        c10::InferenceMode guard;
        expected = model->predict(x);
      }
      const at::Tensor got = yolotrain::testing::run_onnxruntime(path, x, tmp.path()).output;
      REQUIRE(got.sizes() == expected.sizes());
      if (end2end) {
        CHECK(got.size(1) == 300);
        CHECK(got.size(2) == 6);
        const double range = (expected.slice(2, 0, 4).max() - expected.slice(2, 0, 4).min()).item<double>();
        CHECK(unmatched_rows(expected, got, 0.01, 1e-4 * range) == 0);
        CHECK(unmatched_rows(got, expected, 0.01, 1e-4 * range) == 0);
        CHECK((expected.select(2, 4) >= 0.01).sum().item<int64_t>() > 10);  // the check saw detections
      } else {
        const Agreement agree = compare(expected, got);
        CHECK(agree.diff <= 1e-4 * agree.range);
        CHECK(agree.same_detections);
      }
    }
  }
}

TEST_CASE("YOLO26 weights: safetensors say whose construction they fit", "[export]") {
  TempDir tmp;
  yolotrain::nn::DetectionModel model(yolotrain::nn::DetectionModelOptions("yolo26n.yaml").nc(3));
  const fs::path weights = tmp.path() / "y26.safetensors";
  yolotrain::nn::write_safetensors(weights, yolotrain::nn::state_dict(*model), {{"ultralytics", "8.4"}});
  const fs::path again = yolotrain::exporter::export_safetensors(weights, tmp.path() / "again.safetensors");
  const auto w = yolotrain::io::read_model_weights(again);
  CHECK(w.builds_like == "8.4");
  CHECK(w.model_yaml == "yolo26n.yaml");
  // Built back from the file: SPPF's cv1 without SiLU, as it was (8.4).
  auto rebuilt = yolotrain::io::build_model(w, again.string());
  CHECK(rebuilt->model[9]->as<yolotrain::nn::SPPFImpl>()->cv1->act.is_empty());
}

TEST_CASE("export arguments: Ultralytics' names, W.onnx beside W, bad values named", "[export]") {
  using yolotrain::exporter::ExportConfig;
  const auto c =
      ExportConfig::from_args({"model=runs/best.pt", "format=onnx", "imgsz=480,640", "dynamic=true", "opset=12"});
  CHECK(c.onnx.imgsz_h == 480);
  CHECK(c.onnx.imgsz_w == 640);
  CHECK(c.onnx.dynamic);
  CHECK(c.onnx.opset == 12);
  CHECK(yolotrain::exporter::export_path("runs/best.pt", "onnx") == fs::path("runs/best.onnx"));
  CHECK(yolotrain::exporter::export_path("w.safetensors", "safetensors") == fs::path("w.export.safetensors"));
  CHECK_THROWS_WITH(ExportConfig::from_args({"model=a.pt", "opset=18"}), Catch::Contains("12 to 17"));
  CHECK_THROWS_WITH(ExportConfig::from_args({"model=a.pt", "format=tflite"}), Catch::Contains("safetensors or onnx"));
  CHECK_THROWS_WITH(ExportConfig::from_args({"format=onnx"}), Catch::Contains("needs model="));
  CHECK_THROWS_WITH(ExportConfig::from_args({"model=a.pt", "simplify=true"}),
                    Catch::Contains("no argument 'simplify'"));
}
