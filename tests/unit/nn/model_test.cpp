// DetectionModel against the Ultralytics 8.2.82 reference figures (../shared/reference).
#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>

#include "yolotrain/error.hpp"
#include "ultralytics_reference.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace nn = yolotrain::nn;
namespace fs = std::filesystem;
using yolotrain::test::count_parameters;

namespace {

struct RefEntry {
  std::string name, shape, dtype;
};

// A state-dict TSV of ../shared/reference by model ("yolov8n_nc80" ...); empty when the shared
// folder is absent.
std::map<std::string, std::vector<RefEntry>> reference_state_dicts(const std::string& file) {
  const fs::path tsv = fs::path(YOLOTRAIN_SHARED_DIR) / "reference" / file;
  std::map<std::string, std::vector<RefEntry>> out;
  std::ifstream in(tsv);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ss(line);
    std::string model, index;
    RefEntry e;
    std::getline(ss, model, '\t');
    std::getline(ss, index, '\t');
    std::getline(ss, e.name, '\t');
    std::getline(ss, e.shape, '\t');
    std::getline(ss, e.dtype, '\t');
    REQUIRE(std::stoul(index) == out[model].size());
    out[model].push_back(e);
  }
  return out;
}

std::string shape_text(const at::Tensor& t) {
  if (t.dim() == 0) return "scalar";
  std::string s;
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "x" : "") + std::to_string(t.size(i));
  return s;
}

std::string dtype_text(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return "float32";
    case at::kLong: return "int64";
    default: return at::toString(t.scalar_type());
  }
}

// The tolerance that separates two correct float32 implementations (porting facts).
bool close_to(const at::Tensor& a, const at::Tensor& ref) {
  const double max_ref = ref.abs().max().item<double>();
  return ((a - ref).abs() <= ref.abs() * 1e-4 + 1e-4 * max_ref).all().item<bool>();
}

std::string write_yaml(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

const char* kTinyHead = R"(
nc: 2
backbone:
  - [-1, 1, Conv, [8, 3, 2]]
  - [-1, 1, Conv, [16, 3, 2]]
  - [-1, 1, Conv, [16, 3, 2]]
head:
  - [-1, 1, Conv, [16, 3, 2]]
  - [-1, 1, Conv, [16, 3, 2]]
  - [[2, 3, 4], 1, Detect, [nc]]
)";

}  // namespace

TEST_CASE("parameter counts match Ultralytics for every scale", "[nn]") {
  const std::vector<std::tuple<std::string, int64_t, int64_t>> cases = {
      {"yolov8n.yaml", 80, 3157200}, {"yolov8s.yaml", 80, 11166560}, {"yolov8m.yaml", 80, 25902640},
      {"yolov8l.yaml", 80, 43691520}, {"yolov8x.yaml", 80, 68229648}, {"yolov8n.yaml", 3, 3011433},
      {"yolov8s.yaml", 3, 11136761},
      // YOLO11 (Ultralytics 8.3.58; ../shared/reference/yolo11-facts.md)
      {"yolo11n.yaml", 80, 2624080}, {"yolo11s.yaml", 80, 9458752}, {"yolo11m.yaml", 80, 20114688},
      {"yolo11l.yaml", 80, 25372160}, {"yolo11x.yaml", 80, 56966176}, {"yolo11n.yaml", 3, 2590425},
      {"yolo11s.yaml", 3, 9428953}, {"yolo11m.yaml", 3, 20055321}};
  for (const auto& [name, nc, params] : cases) {
    INFO(name << " nc=" << nc);
    nn::DetectionModel model(nn::DetectionModelOptions(name).nc(nc));
    CHECK(count_parameters(*model) == params);
    CHECK(model->nc() == nc);
    CHECK(model->strides() == std::vector<double>{8, 16, 32});
  }
}

TEST_CASE("state dict names order shapes and dtypes match Ultralytics' (YOLOv8 and YOLO11)", "[nn]") {
  for (const auto& [file, models] : std::vector<std::pair<std::string, size_t>>{{"yolov8_state_dicts.tsv", 4},
                                                                               {"yolo11n_state_dict.tsv", 1}}) {
    if (!fs::exists(fs::path(YOLOTRAIN_SHARED_DIR) / "reference" / file)) {
      WARN("skipped: " << YOLOTRAIN_SHARED_DIR << "/reference/" << file << " is absent");
      continue;
    }
    const auto ref = reference_state_dicts(file);
    REQUIRE(ref.size() == models);
    for (const auto& [key, entries] : ref) {
      INFO(key);
      const std::string family = key.substr(0, key.find_first_of("nslmx", 4));  // yolov8 / yolo11
      const std::string scale = key.substr(family.size(), 1);
      const int64_t nc = std::stoll(key.substr(key.find("_nc") + 3));
      nn::DetectionModel model(nn::DetectionModelOptions(family + scale + ".yaml").nc(nc));
      const auto sd = nn::state_dict(*model);
      REQUIRE(sd.size() == entries.size());
      for (size_t i = 0; i < sd.size(); ++i) {
        INFO("index " << i);
        CHECK(sd[i].first == entries[i].name);
        CHECK(shape_text(sd[i].second) == entries[i].shape);
        CHECK(dtype_text(sd[i].second) == entries[i].dtype);
      }
    }
  }
}

TEST_CASE("model names resolve to models/yolov8.yaml with the scale", "[nn]") {
  const auto src = nn::resolve_model("yolov8s.yaml");
  CHECK(src.path.filename() == "yolov8.yaml");
  CHECK(src.scale == "s");
  CHECK(nn::guess_model_scale("path/to/yolov8x-custom.yaml") == "x");
  CHECK(nn::guess_model_scale("mynet.yaml").empty());
  CHECK(nn::make_divisible(16.0, 8) == 16);
  CHECK(nn::make_divisible(16.1, 8) == 24);

  nn::DetectionModel by_path(nn::DetectionModelOptions(src.path.string()).scale("n"));
  CHECK(count_parameters(*by_path) == 3157200);
  CHECK(by_path->scale() == "n");

  try {
    nn::resolve_model("nosuchmodel.yaml");
    FAIL("expected an error");
  } catch (const yolotrain::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("nosuchmodel.yaml") && Catch::Contains("YOLOTRAIN_MODELS"));
  }
}

TEST_CASE("YOLOTRAIN_MODELS adds a folder of model YAMLs", "[nn]") {
  const fs::path dir = fs::temp_directory_path() / ("yolotrain_nn_models_" + std::to_string(::getpid()));
  write_yaml(dir, "tiny.yaml", kTinyHead);
  ::setenv("YOLOTRAIN_MODELS", dir.c_str(), 1);
  nn::DetectionModel model(nn::DetectionModelOptions("tiny.yaml"));
  ::unsetenv("YOLOTRAIN_MODELS");
  fs::remove_all(dir);
  CHECK(model->nc() == 2);
  CHECK(model->strides() == std::vector<double>{8, 16, 32});
  CHECK(model->names() == std::vector<std::string>{"0", "1"});
  const auto out = model->forward(at::zeros({2, 3, 64, 32}));
  REQUIRE(out.size() == 3);
  CHECK(out[0].sizes() == at::IntArrayRef({2, 64 + 2, 8, 4}));
}

TEST_CASE("bad model YAML rows give errors that name the row", "[nn]") {
  const fs::path dir = fs::temp_directory_path() / ("yolotrain_nn_bad_" + std::to_string(::getpid()));
  auto expect_error = [&](const std::string& text, const std::vector<std::string>& parts) {
    const std::string path = write_yaml(dir, "bad.yaml", text);
    try {
      nn::DetectionModel model{nn::DetectionModelOptions(path)};
      FAIL("expected an error for:\n" << text);
    } catch (const yolotrain::Error& e) {
      INFO(e.what());
      for (const auto& p : parts) CHECK_THAT(e.what(), Catch::Contains(p));
    }
  };
  std::string unknown = kTinyHead;
  unknown.replace(unknown.find("[-1, 1, Conv, [16, 3, 2]]\n  - [-1, 1, Conv, [16, 3, 2]]\n  - [[2"), 25,
                  "[-1, 1, Foo, [16, 3, 2]]");
  expect_error(unknown, {"head[0]", "unknown module 'Foo'", "line"});
  std::string bad_from = kTinyHead;
  bad_from.replace(bad_from.find("[[2, 3, 4]"), 10, "[[2, 3, 9]");
  expect_error(bad_from, {"head[2]", "'from' index 9"});
  expect_error("nc: 2\nhead:\n  - [-1, 1, Conv, [8, 3, 2]]\n", {"'backbone'"});
  expect_error("nc: 2\nbackbone:\n  - [-1, 1, Conv, [8, 3, 2]]\nhead:\n  - [-1, 1, Conv, [8, 3, 2]]\n",
               {"Detect"});
  fs::remove_all(dir);
}

TEST_CASE("output shapes for a non-square input and decoded predictions", "[nn]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(80));
  model->eval();
  const at::Tensor x = at::rand({2, 3, 64, 96});
  const auto raw = model->forward(x);
  REQUIRE(raw.size() == 3);
  CHECK(raw[0].sizes() == at::IntArrayRef({2, 144, 8, 12}));
  CHECK(raw[1].sizes() == at::IntArrayRef({2, 144, 4, 6}));
  CHECK(raw[2].sizes() == at::IntArrayRef({2, 144, 2, 3}));
  const at::Tensor y = model->predict(x);
  REQUIRE(y.sizes() == at::IntArrayRef({2, 84, 96 + 24 + 6}));

  // Anchor (level, y, x) decoded by hand: side-major DFL bins, ltrb around the cell centre.
  auto expect_anchor = [&](int level, int64_t gy, int64_t gx, int64_t a) {
    const double s = model->strides()[level];
    const at::Tensor col = raw[level].index({1, at::indexing::Slice(), gy, gx});
    const at::Tensor dist = (col.slice(0, 0, 64).view({4, 16}).softmax(1) * at::arange(16, at::kFloat)).sum(1);
    const double cx = gx + 0.5, cy = gy + 0.5;
    const double x1 = cx - dist[0].item<double>(), y1 = cy - dist[1].item<double>();
    const double x2 = cx + dist[2].item<double>(), y2 = cy + dist[3].item<double>();
    const at::Tensor expected = at::tensor({(x1 + x2) / 2 * s, (y1 + y2) / 2 * s, (x2 - x1) * s, (y2 - y1) * s});
    CHECK(close_to(y.index({1, at::indexing::Slice(0, 4), a}), expected.to(at::kFloat)));
    CHECK(close_to(y.index({1, at::indexing::Slice(4), a}), col.slice(0, 64).sigmoid()));
  };
  expect_anchor(0, 0, 0, 0);
  expect_anchor(0, 3, 5, 3 * 12 + 5);
  expect_anchor(2, 1, 2, 96 + 24 + 5);
}

// Ultralytics 8.3 (the default before 8.4): box biases 1.0, a train-mode stride probe that leaves
// running_var 0.9 and num_batches_tracked 1; 8.4: box biases 2.0, BatchNorm untouched by the
// probe (its DetectionModel("yolov8n.yaml", nc=64) run here: bias 2.0, running_var 1.0, 0 batches).
TEST_CASE("initialisation follows Ultralytics: Detect biases BN state and DFL", "[nn]") {
  for (const std::string version : {"8.3", "8.4"}) {
  INFO("built like Ultralytics " << version);
  const bool v84 = version == "8.4";
  for (const auto& [nc, expected] : std::vector<std::pair<int64_t, std::vector<double>>>{
           {80, {-11.536642, -10.150348, -8.764053}}, {3, {-8.253227, -6.866933, -5.480639}}}) {
    nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(nc).ultralytics(version));
    std::map<std::string, at::Tensor> sd;
    for (const auto& [k, v] : nn::state_dict(*model)) sd[k] = v;
    for (int i = 0; i < 3; ++i) {
      const std::string box = "model.22.cv2." + std::to_string(i) + ".2.bias";
      const std::string cls = "model.22.cv3." + std::to_string(i) + ".2.bias";
      CHECK(sd.at(box).eq(v84 ? 2.0 : 1.0).all().item<bool>());
      CHECK(sd.at(cls).size(0) == nc);
      CHECK((sd.at(cls) - expected[i]).abs().max().item<double>() < 1e-5);
    }
    const at::Tensor dfl = sd.at("model.22.dfl.conv.weight");
    CHECK(dfl.flatten().equal(at::arange(16, at::kFloat)));
    CHECK_FALSE(dfl.requires_grad());
    int bns = 0;
    for (const auto& m : model->modules()) {
      if (auto* bn = m->as<torch::nn::BatchNorm2dImpl>()) {
        ++bns;
        CHECK(bn->options.eps() == 1e-3);
        CHECK(*bn->options.momentum() == Approx(0.03));
        CHECK(bn->running_mean.eq(0).all().item<bool>());
        CHECK((bn->running_var - (v84 ? 1.0 : 0.9)).abs().max().item<double>() < 1e-6);
        CHECK(bn->num_batches_tracked.item<int64_t>() == (v84 ? 0 : 1));
      }
    }
    CHECK(bns == 57);
  }
  }
}

TEST_CASE("a train-mode forward updates BN running stats with momentum 0.03 and the unbiased variance", "[nn]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").ultralytics("8.3"));  // running_var 0.9
  model->train();
  auto conv0 = model->model[0]->as<nn::ConvImpl>();
  const at::Tensor x = at::randn({2, 3, 64, 64});
  at::Tensor z;
  {
    torch::NoGradGuard no_grad;
    z = conv0->conv->forward(x);
  }
  const at::Tensor mean = z.mean({0, 2, 3});
  const at::Tensor var = z.var({0, 2, 3}, /*unbiased=*/true);
  model->forward(x);
  CHECK(close_to(conv0->bn->running_mean, 0.03 * mean));
  CHECK(close_to(conv0->bn->running_var, 0.97 * 0.9 + 0.03 * var));
  CHECK(conv0->bn->num_batches_tracked.item<int64_t>() == 2);
}

TEST_CASE("backbone C2f blocks have residuals and head C2f blocks do not", "[nn]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8s.yaml"));
  for (int i : {2, 4, 6, 8}) {
    auto* c2f = model->model[i]->as<nn::C2fImpl>();
    REQUIRE(c2f != nullptr);
    CHECK(c2f->m[0]->as<nn::BottleneckImpl>()->add);
  }
  for (int i : {12, 15, 18, 21}) {
    auto* c2f = model->model[i]->as<nn::C2fImpl>();
    REQUIRE(c2f != nullptr);
    CHECK_FALSE(c2f->m[0]->as<nn::BottleneckImpl>()->add);
  }
  CHECK(model->model[4]->as<nn::C2fImpl>()->m->size() == 2);  // 6 repeats * 0.33 -> 2
  CHECK(model->model[9]->as<nn::SPPFImpl>() != nullptr);
  CHECK(model->model[22]->as<nn::DetectImpl>() != nullptr);
}

TEST_CASE("nc equal to a YAML channel value is not scaled as in Ultralytics 8.3, and is in 8.4", "[nn]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(64).ultralytics("8.3"));
  CHECK(count_parameters(*model) == 3038544);
  CHECK(model->model[0]->as<nn::ConvImpl>()->conv->weight.sizes() == at::IntArrayRef({64, 3, 3, 3}));
  CHECK(model->model[1]->as<nn::ConvImpl>()->conv->weight.sizes() == at::IntArrayRef({32, 64, 3, 3}));
  nn::DetectionModel v84(nn::DetectionModelOptions("yolov8n.yaml").nc(64));  // 8.4: `if m is not Classify`
  CHECK(count_parameters(*v84) == 3023328);
  CHECK(v84->model[0]->as<nn::ConvImpl>()->conv->weight.sizes() == at::IntArrayRef({16, 3, 3, 3}));
}

TEST_CASE("summary counts parameters gradients and GFLOPs as Ultralytics", "[nn]") {
  const std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, double>> cases = {
      {"yolov8n.yaml", 80, 3157200, 3157184, 8.7440},
      {"yolov8n.yaml", 3, 3011433, 3011417, 8.0849},
      {"yolov8s.yaml", 80, 11166560, 11166544, 28.6026},
      {"yolov8s.yaml", 3, 11136761, 11136745, 28.4370}};
  for (const auto& [name, nc, params, grads, gflops] : cases) {
    INFO(name << " nc=" << nc);
    nn::DetectionModel model(nn::DetectionModelOptions(name).nc(nc));
    const auto s = nn::summarize(*model);
    CHECK(s.parameters == params);
    CHECK(s.gradients == grads);
    CHECK(s.gflops == Approx(gflops).margin(1e-4));
    CHECK(model->is_training());
  }
  // The layer count as each version counts it (8.4: leaf modules only; both run here).
  nn::DetectionModel v83(nn::DetectionModelOptions("yolov8n.yaml").ultralytics("8.3"));
  CHECK_THAT(nn::summarize(*v83).to_string(),
             Catch::Equals("yolov8n summary: 225 layers, 3,157,200 parameters, 3,157,184 gradients, 8.7 GFLOPs"));
  nn::DetectionModel v84(nn::DetectionModelOptions("yolov8n.yaml"));
  CHECK_THAT(nn::summarize(*v84).to_string(),
             Catch::Equals("yolov8n summary: 130 layers, 3,157,200 parameters, 3,157,184 gradients, 8.7 GFLOPs"));
  v84->eval();
  v84->fuse();
  CHECK(nn::summarize(*v84).layers == 73);
}

TEST_CASE("fuse keeps eval outputs and gives Ultralytics' fused parameter count", "[nn]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml"));
  // Non-trivial BN statistics, so that folding them matters.
  model->train();
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < 3; ++i) model->forward(at::rand({2, 3, 64, 64}));
  }
  model->eval();
  const at::Tensor x = at::rand({1, 3, 96, 64});
  at::Tensor before, after;
  std::vector<at::Tensor> raw_before, raw_after;
  {
    torch::NoGradGuard no_grad;
    before = model->predict(x);
    raw_before = model->forward(x);
    model->fuse();
    after = model->predict(x);
    raw_after = model->forward(x);
  }
  CHECK(model->fused());
  CHECK(close_to(after, before));
  for (size_t i = 0; i < raw_before.size(); ++i) CHECK(close_to(raw_after[i], raw_before[i]));
  CHECK(count_parameters(*model) == 3151904);
  bool has_bn = false, has_bias = false;
  for (const auto& [k, v] : nn::state_dict(*model)) {
    has_bn = has_bn || k.find(".bn.") != std::string::npos;
    has_bias = has_bias || k == "model.0.conv.bias";
  }
  CHECK_FALSE(has_bn);
  CHECK(has_bias);
  CHECK(nn::count_gflops(*model) == Approx(8.7440).margin(1e-4));
  CHECK(nn::summarize(*model).layers == 73);  // 8.4's count: the leaves (8.3: 168)
}

TEST_CASE("clone copies weights and keeps them independent", "[nn]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  auto copy = std::dynamic_pointer_cast<nn::DetectionModelImpl>(model->clone());
  REQUIRE(copy);
  const auto a = nn::state_dict(*model);
  const auto b = nn::state_dict(*copy);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.equal(b[i].second));
    CHECK(a[i].second.data_ptr() != b[i].second.data_ptr());
  }
  CHECK(copy->strides() == model->strides());
  model->eval();
  copy->eval();
  const at::Tensor x = at::rand({1, 3, 64, 64});
  CHECK(model->predict(x).equal(copy->predict(x)));
}
