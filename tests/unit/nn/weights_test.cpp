// Weights exchange: safetensors files with Ultralytics' names, strict and non-strict loads.
#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include "test_support.hpp"

#include <fstream>

namespace nn = yolotrain::nn;
using yolotrain::test::slurp;
using yolotrain::test::TempDir;

namespace {

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string with_header(const std::string& header, size_t data_bytes) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return out + header + std::string(data_bytes, '\0');
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const yolotrain::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("model weights round-trip through safetensors byte for byte", "[nn]") {
  TempDir dir;
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  nn::save_weights(*model, dir / "a.safetensors", {{"format", "pt"}});
  std::map<std::string, std::string> meta;
  const auto back = nn::read_safetensors(dir / "a.safetensors", &meta);
  CHECK(meta.at("format") == "pt");
  const auto sd = nn::state_dict(*model);
  REQUIRE(back.size() == sd.size());
  for (size_t i = 0; i < sd.size(); ++i) {
    CHECK(back[i].first == sd[i].first);
    CHECK(back[i].second.scalar_type() == sd[i].second.scalar_type());
    CHECK(back[i].second.equal(sd[i].second));
  }
  nn::write_safetensors(dir / "b.safetensors", back, meta);
  CHECK(slurp(dir / "a.safetensors") == slurp(dir / "b.safetensors"));

  // Into a fresh model of the same architecture: same outputs.
  nn::DetectionModel other(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  const auto report = nn::load_weights(*other, dir / "a.safetensors", true);
  CHECK(report.complete());
  CHECK(report.loaded.size() == 355);
  model->eval();
  other->eval();
  const at::Tensor x = at::rand({1, 3, 64, 64});
  CHECK(model->predict(x).equal(other->predict(x)));
}

TEST_CASE("safetensors files of every exchange dtype are read back", "[nn]") {
  TempDir dir;
  const nn::NamedTensors tensors = {
      {"f32", at::randn({2, 3})},          {"f16", at::randn({3}).to(at::kHalf)},
      {"bf16", at::randn({3}).to(at::kBFloat16)}, {"f64", at::randn({2}, at::kDouble)},
      {"i64", at::arange(4, at::kLong)},   {"i32", at::arange(4, at::kInt)},
      {"u8", at::arange(4, at::kByte)},    {"bool", at::tensor({1, 0}, at::kByte).to(at::kBool)}};
  nn::write_safetensors(dir / "t.safetensors", tensors);
  const auto back = nn::read_safetensors(dir / "t.safetensors");
  REQUIRE(back.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    CHECK(back[i].first == tensors[i].first);
    CHECK(back[i].second.equal(tensors[i].second));
  }
}

TEST_CASE("malformed safetensors files are refused naming the problem", "[nn]") {
  TempDir dir;
  nn::write_safetensors(dir / "ok.safetensors", {{"w", at::randn({4, 4})}});
  const std::string ok = slurp(dir / "ok.safetensors");
  const auto p = dir / "bad.safetensors";

  write_bytes(p, ok.substr(0, ok.size() - 10));
  CHECK_THAT(error_of([&] { nn::read_safetensors(p); }), Catch::Contains("bad.safetensors") && Catch::Contains("past"));

  std::string long_header = ok;
  long_header[0] = '\xff';
  long_header[1] = '\xff';
  write_bytes(p, long_header);
  CHECK_THAT(error_of([&] { nn::read_safetensors(p); }), Catch::Contains("header length"));

  write_bytes(p, ok.substr(0, 5));
  CHECK_THAT(error_of([&] { nn::read_safetensors(p); }), Catch::Contains("shorter than 8 bytes"));

  write_bytes(p, with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                             12));
  CHECK_THAT(error_of([&] { nn::read_safetensors(p); }), Catch::Contains("overlap"));

  write_bytes(p, with_header(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", 2));
  CHECK_THAT(error_of([&] { nn::read_safetensors(p); }), Catch::Contains("unknown dtype"));

  write_bytes(p, with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8));
  CHECK_THAT(error_of([&] { nn::read_safetensors(p); }), Catch::Contains("'a'") && Catch::Contains("bytes"));

  CHECK_THAT(error_of([&] { nn::read_safetensors(dir / "missing.safetensors"); }),
             Catch::Contains("missing.safetensors"));
}

TEST_CASE("strict load reports missing unexpected and mismatched names in one error", "[nn]") {
  TempDir dir;
  nn::DetectionModel coco(nn::DetectionModelOptions("yolov8n.yaml").nc(80));
  auto sd = nn::state_dict(*coco);
  sd.erase(sd.begin());                                   // model.0.conv.weight missing
  sd.emplace_back("model.99.extra", at::zeros({1}));      // unexpected
  nn::write_safetensors(dir / "w.safetensors", sd);

  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  const auto before = nn::state_dict(*model);
  const std::string msg = error_of([&] { nn::load_weights(*model, dir / "w.safetensors", true); });
  CHECK_THAT(msg, Catch::Contains("w.safetensors"));
  CHECK_THAT(msg, Catch::Contains("1 missing") && Catch::Contains("model.0.conv.weight"));
  CHECK_THAT(msg, Catch::Contains("1 not in the model") && Catch::Contains("model.99.extra"));
  CHECK_THAT(msg, Catch::Contains("36 with another shape") &&
                      Catch::Contains("model.22.cv3.0.0.conv.weight [80, 64, 3, 3] in the weights vs [64, 64, 3, 3]"));
  CHECK_THAT(msg, Catch::Contains("strict = false"));
  const auto after = nn::state_dict(*model);
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i].second.equal(before[i].second));  // untouched
}

TEST_CASE("non-strict load takes the matching tensors only", "[nn]") {
  TempDir dir;
  nn::DetectionModel coco(nn::DetectionModelOptions("yolov8n.yaml").nc(80));
  nn::save_weights(*coco, dir / "coco.safetensors");
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  at::Tensor cls_before;
  for (const auto& [k, v] : nn::state_dict(*model)) {
    if (k == "model.22.cv3.0.2.bias") cls_before = v.clone();
  }
  REQUIRE(cls_before.defined());
  const auto report = nn::load_weights(*model, dir / "coco.safetensors", false);
  CHECK(report.missing.empty());
  CHECK(report.unexpected.empty());
  // cv3 of every level: the two hidden Convs (c3 = 80 vs 64) and the final conv differ.
  CHECK(report.mismatched.size() == 3 * (2 * 5 + 2));
  CHECK(report.loaded.size() == 355 - report.mismatched.size());
  std::map<std::string, at::Tensor> mine, theirs;
  for (const auto& [k, v] : nn::state_dict(*model)) mine[k] = v;
  for (const auto& [k, v] : nn::state_dict(*coco)) theirs[k] = v;
  for (const auto& name : report.loaded) CHECK(mine.at(name).equal(theirs.at(name)));
  CHECK(mine.at("model.22.cv3.0.2.bias").equal(cls_before));

  const std::string msg = error_of([&] { nn::load_weights(*model, dir / "coco.safetensors", true); });
  CHECK_THAT(msg, Catch::Contains("[80, 64, 3, 3]") && Catch::Contains("[64, 64, 3, 3]"));
}
