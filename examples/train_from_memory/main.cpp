// train_from_memory: trains a YOLO detector on images a program holds in memory — here the
// built-in shapes, drawn on the fly, never written to disk — through data::SampleSource, with the
// lifecycle yolo_train has (Ctrl+C / SIGTERM stop with a checkpoint; the same command with
// resume=true continues exactly). Every key=value is a training argument (yolo_train's), but for
// the generator's own: train=N val=N (images per split, default 64 / 16), size=S (pixels, 96).
//
//   build/examples/train_from_memory epochs=3 imgsz=96 batch=8 name=memory
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "yolotrain/data/sample_source.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace data = yolotrain::data;
namespace engine = yolotrain::engine;

namespace {

// A program's images: the shapes of split `split`, drawn when asked. Sample i is a function of
// (seed, split, i) only, so it is the same sample in every process: exact resume holds.
class ShapesInMemory : public data::SampleSource {
 public:
  ShapesInMemory(data::ShapesOptions options, std::string split, std::size_t count)
      : options_(options), split_(std::move(split)), count_(count) {}
  std::size_t size() const override { return count_; }
  data::Sample sample(std::size_t index) const override {
    return data::shapes_sample(options_, split_, static_cast<int>(index));
  }

 private:
  data::ShapesOptions options_;
  std::string split_;
  std::size_t count_;
};

// Takes the generator's key=value arguments out of `args`.
int take_int(std::vector<std::string>& args, const std::string& key, int fallback) {
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (it->rfind(key + "=", 0) == 0) {
      const int v = std::stoi(it->substr(key.size() + 1));
      args.erase(it);
      return v;
    }
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  engine::prefer_avx512_kernels();  // before ATen's first CPU kernel
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    data::ShapesOptions shapes;
    const int train = take_int(args, "train", 64), val = take_int(args, "val", 16);
    shapes.imgsz = take_int(args, "size", 96);
    int count = 0;
    const char* const* names = data::shapes_class_names(&count);
    const std::vector<std::string> classes(names, names + count);
    engine::TrainingData given{
        data::memory_dataset(std::make_shared<ShapesInMemory>(shapes, "train", train), classes, "train"),
        data::memory_dataset(std::make_shared<ShapesInMemory>(shapes, "val", val), classes, "val")};

    const engine::TrainConfig config = engine::TrainConfig::from_args(args);
    yolotrain::lifecycle::ControlToken token;  // another thread may call token.request_stop()
    yolotrain::lifecycle::SignalBindingOptions signal_options;
    signal_options.mapping = config.signal_mapping();
    yolotrain::lifecycle::SignalBinding signals(token, signal_options);
    engine::TrainerCallbacks callbacks;
    callbacks.on_train_end = [&signals](const engine::RunResult&) { signals.ignore_from_now(); };
    engine::Trainer trainer(config, callbacks, std::move(given));
    const engine::RunResult r = trainer.run(token);
    if (r.outcome == engine::RunOutcome::Failed) std::cerr << "train_from_memory: error: " << r.reason << std::endl;
    return r.exit_code();
  } catch (const engine::ConfigError& e) {
    std::cerr << "train_from_memory: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "train_from_memory: error: " << e.what() << std::endl;
    return 1;
  }
}
