#include "yolotrain/engine/tensorboard_logger.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <vector>

#include "event_file.hpp"
#include "tensorboard.pb.h"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"

namespace yolotrain::engine {
namespace fs = std::filesystem;
namespace tb = yolotrain::tensorboard;
namespace {

constexpr const char* kFilePrefix = "events.out.tfevents.";

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Per-step tags and pictures count global steps; every other tag counts epochs.
bool on_step_axis(const std::string& tag) { return tag.rfind("step/", 0) == 0 || tag.rfind("images/", 0) == 0; }

fs::path newest_event_file(const fs::path& dir) {
  fs::path newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kFilePrefix, 0) == 0 && (newest.empty() || name > newest.filename().string())) newest = entry.path();
  }
  return newest;
}

// The file's records up to the resumed position (a torn last record dropped), as TFRecords.
std::string records_before(const fs::path& path, std::int64_t step, std::int64_t epochs_done) {
  std::string kept;
  for (const std::string& record : detail::read_tfrecords(lifecycle::read_file(path))) {
    tb::Event event;
    if (!event.ParseFromString(record)) break;
    if (event.has_summary()) {
      tb::Summary summary;
      for (const auto& value : event.summary().value()) {
        if (event.step() <= (on_step_axis(value.tag()) ? step : epochs_done)) *summary.add_value() = value;
      }
      if (summary.value_size() == 0) continue;
      *event.mutable_summary() = summary;
    }
    kept += detail::tfrecord(event.SerializeAsString());
  }
  return kept;
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof(buf) - 1) == 0 ? std::string(buf) : std::string("localhost");
}

}  // namespace

TensorBoardLogger::TensorBoardLogger(const fs::path& dir, std::int64_t step, std::int64_t epochs_done) {
  path_ = newest_event_file(dir);
  if (!path_.empty()) {
    lifecycle::atomic_write(path_, records_before(path_, step, epochs_done));
  } else {
    path_ = dir / (kFilePrefix + std::to_string(static_cast<long long>(now())) + "." + host_name());
    tb::Event first;
    first.set_wall_time(now());
    first.set_file_version("brain.Event:2");
    lifecycle::atomic_write(path_, detail::tfrecord(first.SerializeAsString()));
  }
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw Error("tensorboard: cannot append to " + path_.string());
}

void TensorBoardLogger::append(const std::string& event) {
  out_ << detail::tfrecord(event);
  out_.flush();  // a record at a time: a killed process leaves at most one torn one, dropped on resume
}

void TensorBoardLogger::add_scalar(const std::string& tag, double value, std::int64_t step) {
  tb::Event event;
  event.set_wall_time(now());
  event.set_step(step);
  auto* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  append(event.SerializeAsString());
}

bool TensorBoardLogger::add_picture(const fs::path& picture, std::int64_t step) {
  if (!fs::exists(picture)) return false;
  data::Image image;
  try {
    image = data::decode_image(picture);
  } catch (const Error&) {
    return false;
  }
  tb::Event event;
  event.set_wall_time(now());
  event.set_step(step);
  auto* v = event.mutable_summary()->add_value();
  v->set_tag("images/" + picture.filename().string());
  auto* img = v->mutable_image();
  img->set_height(image.height);
  img->set_width(image.width);
  img->set_colorspace(3);
  img->set_encoded_image_string(lifecycle::read_file(picture));
  append(event.SerializeAsString());
  return true;
}

void TensorBoardLogger::listen(TrainerCallbacks& callbacks) {
  callbacks.on_batch_end.add([this](const TrainerProgress& p) {
    for (const auto& [name, value] : p.named()) add_scalar("step/" + name, value, p.step);
  });
  callbacks.on_epoch_end.add([this](const EpochMetrics& m) {
    for (const auto& [name, value] : m.named()) add_scalar(name, value, m.epoch);
  });
  callbacks.on_train_end.add([this](const RunResult& r) {
    for (const char* picture : {"results.png", "val_batch0_pred.jpg", "PR_curve.png"}) {
      add_picture(r.run_dir / picture, r.step);
    }
  });
}

}  // namespace yolotrain::engine
