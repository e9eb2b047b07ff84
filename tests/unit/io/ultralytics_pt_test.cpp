#include <caffe2/serialize/inline_container.h>

#include "yolotrain/export/safetensors_export.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/io/torch_archive.hpp"
#include "yolotrain/io/ultralytics_pt.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"
#include "yolotrain/nn/weights.hpp"

#include "catch.hpp"

#include <fstream>

#include "test_support.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using yolotrain::io::read_ultralytics_pt;
using yolotrain::test::TempDir;

namespace {

using yolotrain::test::literal_bytes;

const fs::path kWeights = fs::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics" / "bccd_yolov8n";

// SHA-256 over each name then its tensor's bytes, as the Python reference computes it:
//   for k, v in sd.items(): h.update(k.encode()); h.update(v.contiguous().numpy().tobytes())
std::string digest(const yolotrain::lifecycle::NamedTensors& tensors) {
  yolotrain::lifecycle::Sha256 h;
  for (const auto& [name, t] : tensors) {
    const at::Tensor c = t.contiguous();
    h.update(name);
    h.update(c.data_ptr(), c.nbytes());
  }
  return h.hex_digest();
}

// A torch.save-style zip whose data.pkl is `pickle` (archive folder "x/").
void write_archive(const fs::path& path, const std::string& pickle) {
  std::ofstream out(path, std::ios::binary);
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    return size;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeEndOfFile();
}

std::string error_reading(const fs::path& path) {
  try {
    read_ultralytics_pt(path);
  } catch (const yolotrain::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

namespace {

struct Expected {
  const char* file;
  const char* source;
  std::int64_t epoch;
  const char* sha256;
};

// What a family's genuine files must read as: `tensors` names from model.0.conv.weight to `last`.
struct Family {
  fs::path folder;
  std::size_t tensors;
  const char* last;
  const char* yaml_file;
  const char* version;
};

void check_genuine(const Family& family, std::initializer_list<Expected> files) {
  for (const Expected& e : files) {
    INFO((family.folder / e.file).string());
    const auto pt = read_ultralytics_pt(family.folder / e.file);
    CHECK(pt.state_dict.size() == family.tensors);
    CHECK(pt.state_dict.front().first == "model.0.conv.weight");
    CHECK(pt.state_dict.back().first == family.last);
    CHECK(pt.state_dict.front().second.scalar_type() == at::kHalf);
    CHECK(pt.source == e.source);
    CHECK(pt.epoch == e.epoch);
    CHECK(pt.nc == 3);
    CHECK(pt.names == std::vector<std::string>{"RBC", "WBC", "Platelets"});
    CHECK(pt.scale == "n");
    CHECK(pt.yaml_file == family.yaml_file);
    CHECK(pt.version == family.version);
    CHECK(pt.train_args.at("imgsz") == "320");
    CHECK(pt.train_args.at("lr0") == "0.01");
    CHECK(pt.train_args.at("deterministic") == "True");
    CHECK(digest(pt.state_dict) == e.sha256);
  }
}

}  // namespace

// The digests come from Debian's python3-torch reading the same files with torch.load (the
// ultralytics classes stubbed) and walking _parameters/_buffers/_modules as state_dict() does.
TEST_CASE("read_ultralytics_pt reads genuine Ultralytics 8.2.82 checkpoints", "[io]") {
  if (!fs::exists(kWeights / "best.pt")) {
    WARN("skipped: " << kWeights.string() << " is absent");
    return;
  }
  check_genuine({kWeights, 355, "model.22.dfl.conv.weight", "yolov8n.yaml", "8.2.82"},
                {Expected{"best.pt", "model", -1, "63e28cc8a5e3691be172250a8ee57212bcd7c6ac257f9920ed0181ffd2163e55"},
                 Expected{"last.pt", "model", -1, "63e28cc8a5e3691be172250a8ee57212bcd7c6ac257f9920ed0181ffd2163e55"},
                 Expected{"epoch5.pt", "ema", 5, "572a896ea08d30c010e8ba799fe03ca9fe83fad4c97dd2933140194b6a17334b"}});
}

// The same for Ultralytics 8.3.58's YOLO11n files (C3k2, C2PSA, the depthwise Detect branch;
// epoch5.pt keeps its loss criterion and optimizer).
TEST_CASE("read_ultralytics_pt reads genuine Ultralytics 8.3.58 YOLO11 checkpoints", "[io][yolo11]") {
  const fs::path folder = kWeights.parent_path() / "bccd_yolo11n";
  if (!fs::exists(folder / "best.pt")) {
    WARN("skipped: " << folder.string() << " is absent");
    return;
  }
  check_genuine({folder, 499, "model.23.dfl.conv.weight", "yolo11n.yaml", "8.3.58"},
                {Expected{"best.pt", "model", -1, "09f76404f98b8e3467bda7a2ebad4a0aa91296264338de866e9dcc479d5b5b79"},
                 Expected{"last.pt", "model", -1, "09f76404f98b8e3467bda7a2ebad4a0aa91296264338de866e9dcc479d5b5b79"},
                 Expected{"epoch5.pt", "ema", 5, "b1c56ac222c1ea4863c777e595923f6623412c47184d4fafd1fe86aa88434847"}});
  CHECK(yolotrain::io::read_model_weights(folder / "epoch5.pt").model_yaml == "yolo11n.yaml");
}

TEST_CASE("export_safetensors of a .pt writes the same tensors, and every reader agrees", "[io]") {
  if (!fs::exists(kWeights / "best.pt")) {
    WARN("skipped: " << kWeights.string() << " is absent");
    return;
  }
  TempDir tmp;
  const fs::path out = tmp / "best.safetensors";
  yolotrain::exporter::export_safetensors(kWeights / "best.pt", out);
  std::map<std::string, std::string> meta;
  const auto exported = yolotrain::nn::read_safetensors(out, &meta);
  CHECK(digest(exported) == "63e28cc8a5e3691be172250a8ee57212bcd7c6ac257f9920ed0181ffd2163e55");
  CHECK(yolotrain::io::decode_names(meta.at("names")) == std::vector<std::string>{"RBC", "WBC", "Platelets"});
  const auto w = yolotrain::io::read_model_weights(out);
  CHECK(w.model_yaml == "yolov8n.yaml");
  CHECK(w.nc == 3);
  CHECK(w.names[2] == "Platelets");
  const auto pt = yolotrain::io::read_model_weights(kWeights / "best.pt");
  CHECK(pt.format == "pt");
  CHECK(pt.description == "Ultralytics 8.2.82 checkpoint (model)");
}

TEST_CASE("read_ultralytics_pt names what is wrong with a file it cannot read", "[io]") {
  TempDir tmp;
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(tmp / name, std::ios::binary) << bytes;
    return tmp / name;
  };
  CHECK_THAT(error_reading(tmp / "missing.pt"), Catch::Contains("cannot open"));
  CHECK_THAT(error_reading(write("text.pt", "hello, not a checkpoint")), Catch::Contains("no zip header"));
  CHECK_THAT(error_reading(write("legacy.pt", literal_bytes("\x80\x02\x8a\x0a"))),
             Catch::Contains("legacy torch.save"));

  if (fs::exists(kWeights / "best.pt")) {  // a real file cut in half
    std::ifstream in(kWeights / "best.pt", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string what = error_reading(write("truncated.pt", bytes.substr(0, bytes.size() / 2)));
    CHECK_THAT(what, Catch::Contains("truncated.pt") && Catch::Contains("broken torch.save archive"));
  }

  write_archive(tmp / "list.pt", literal_bytes("\x80\x02]."));  // a list, not a dict
  CHECK_THAT(error_reading(tmp / "list.pt"), Catch::Contains("holds a list"));

  write_archive(tmp / "bare.pt", literal_bytes("\x80\x02}X\x01\x00\x00\x00" "aK\x01s."));  // {'a': 1}
  CHECK_THAT(error_reading(tmp / "bare.pt"), Catch::Contains("without 'model' or 'ema'"));

  // {'model': RTDETRDetectionModel()}
  write_archive(tmp / "rtdetr.pt", literal_bytes("\x80\x02}X\x05\x00\x00\x00model"
                                                 "cultralytics.nn.tasks\nRTDETRDetectionModel\n)\x81}bs."));
  CHECK_THAT(error_reading(tmp / "rtdetr.pt"),
             Catch::Contains("ultralytics.nn.tasks.RTDETRDetectionModel") &&
                 Catch::Contains("detection, segmentation, pose, classification and OBB models"));

  // {'model': DetectionModel with a child layer '0' of a class yolotrain does not have}
  write_archive(tmp / "attn.pt",
                literal_bytes("\x80\x02}X\x05\x00\x00\x00model"
                              "cultralytics.nn.tasks\nDetectionModel\n)\x81}(X\x0b\x00\x00\x00"
                              "_parameters}X\x08\x00\x00\x00_buffers}X\x08\x00\x00\x00_modules}X\x01\x00\x00\x00"
                              "0"
                              "cultralytics.nn.modules.block\nC2fAttn\n)\x81}bsubs."));
  CHECK_THAT(error_reading(tmp / "attn.pt"),
             Catch::Contains("layer '0'") && Catch::Contains("C2fAttn") && Catch::Contains("does not implement"));

  // A pickle with an opcode the reader refuses (INST).
  write_archive(tmp / "inst.pt", literal_bytes("\x80\x02(iposix\nsystem\n."));
  CHECK_THAT(error_reading(tmp / "inst.pt"), Catch::Contains("inst.pt") && Catch::Contains("unsupported opcode"));
}
