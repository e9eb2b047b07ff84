// Fine-tuning with cls_remap: the head's class rows a model starts from equal those Ultralytics
// 8.4.117's own loading gives (scripts/ultralytics84_cls_remap.py -> data/ultralytics84_cls_remap_*.json:
// its trainer's get_model, set_model_names_for_load then BaseModel.load), to the bit.
#include <ATen/ATen.h>

#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"
#include "yolotrain/nn/class_remap.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/weights.hpp"

#include "catch.hpp"
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "test_support.hpp"

namespace fs = std::filesystem;
namespace nn = yolotrain::nn;

TEST_CASE("cls_remap: the class rows fine-tuning starts from are Ultralytics 8.4's, by name", "[io][nn]") {
  const fs::path weights = fs::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics";
  // COCO's 80 classes -> dog, person, car (the biases; the head's width follows nc, so its weights
  // start fresh); bccd's RBC, WBC, Platelets -> Platelets, " rbc ", WBC (weights and biases).
  for (const auto& [folder, reference] : std::vector<std::pair<std::string, std::string>>{
           {"coco128seg_yolov8n-seg", "yolov8n-seg"},
           {"coco128seg_yolo26n-seg", "yolo26n-seg"},
           {"bccd_yolo11n", "bccd_yolo11n"},
           {"bccd_yolo26n", "bccd_yolo26n"}}) {
    CAPTURE(folder);
    const fs::path pt = weights / folder / "best.pt";
    if (!fs::exists(pt)) {
      WARN("skipped: no " << pt.string());
      continue;
    }
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(
        fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/io/data" / ("ultralytics84_cls_remap_" + reference + ".json")));
    REQUIRE(yolotrain::lifecycle::sha256_hex(yolotrain::test::slurp(pt)) == ref["checkpoint_sha256"]);
    const std::vector<std::string> names = ref["names"];
    auto start = yolotrain::io::read_model_weights(pt.string());
    nn::DetectionModel model(nn::DetectionModelOptions(start.model_yaml).nc(std::int64_t(names.size())).names(names));
    const nn::ClassRemap remap = nn::remap_class_rows(*model, start.tensors, start.names, names);
    const std::size_t n = nn::transfer_weights(*model, start.tensors) + remap.tensors;
    const std::string transferred =
        "Transferred " + std::to_string(n) + "/" + std::to_string(nn::state_dict(*model).size()) + " items";
    CHECK(ref["log"][1].get<std::string>().rfind(transferred, 0) == 0);
    CHECK(ref["log"][0] == "Remapped " + std::to_string(remap.matched) + "/" + std::to_string(remap.nc) +
                               " cls head rows from pretrained weights by class name");
    std::map<std::string, at::Tensor> sd;
    for (const auto& [name, t] : nn::state_dict(*model)) sd[name] = t;
    for (const auto& [name, values] : ref["tensors"].items()) {
      CAPTURE(name);
      REQUIRE(sd.count(name));
      const std::vector<float> expected = values;
      CHECK(at::equal(sd[name].flatten(), at::tensor(expected)));
    }
  }
}

TEST_CASE("cls_remap leaves placeholder names, no match and the same order to the plain transfer", "[io][nn]") {
  const std::vector<std::string> names = {"cat", "dog"};
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(2).names(names));
  nn::NamedTensors tensors = nn::state_dict(*model);
  const std::size_t before = tensors.size();
  CHECK(nn::remap_class_rows(*model, tensors, {"0", "1"}, {"cat", "dog"}).tensors == 0);     // placeholders
  CHECK(nn::remap_class_rows(*model, tensors, {"bird", "fish"}, {"cat", "dog"}).tensors == 0);  // no name
  CHECK(nn::remap_class_rows(*model, tensors, {"Cat", "dog "}, {"cat", "dog"}).tensors == 0);   // same order
  CHECK(tensors.size() == before);
  // Swapped: the three levels' class biases and weights (64 wide for nc 2 either way) take the rows.
  nn::NamedTensors swapped = nn::state_dict(*model);
  for (auto& [name, t] : swapped) t = t.clone();
  const nn::ClassRemap r = nn::remap_class_rows(*model, swapped, {"dog", "cat"}, {"cat", "dog"});
  CHECK(r.tensors == 6);
  CHECK(r.matched == 2);
  CHECK(swapped.size() == before - 6);
}
