// yolo_train: trains YOLOv8 detectors with Ultralytics' argument names, inside yolotrain's
// lifecycle core. Exit codes: 0 completed, 130/143 stopped by SIGINT/SIGTERM (checkpoint
// written), 75 stopped to be resumed (deadline, pause_release=exit, a cloud's preemption notice),
// 1 runtime error, 2 usage.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/engine/validate.hpp"
#include "yolotrain/export/export_config.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"
#include "yolotrain/predict/predict_run.hpp"
#include "yolotrain/version.hpp"

namespace {

namespace fs = std::filesystem;
using yolotrain::engine::TrainConfig;

void print_help() {
  std::cout
      << "yolo_train " << yolotrain::version() << "\n\n"
      << "usage: yolo_train [train] key=value ...      train (resume=true continues a run)\n"
      << "       yolo_train val model=WEIGHTS [data=data.yaml] [imgsz=..] [batch=..]\n"
      << "                                          validate weights (per-class table)\n"
      << "       yolo_train predict model=WEIGHTS source=IMAGES [conf=..] [save_txt=true] ...\n"
      << "                                          detect objects; annotated images in runs/detect/predict\n"
      << "       yolo_train export model=WEIGHTS [format=safetensors|onnx] [imgsz=..] [dynamic=true] ...\n"
      << "                                          write WEIGHTS.safetensors (Ultralytics' names) or WEIGHTS.onnx\n"
      << "WEIGHTS: an Ultralytics .pt (yolov8n.pt, best.pt), a yolo_train .ytckpt or .safetensors;\n"
      << "model=WEIGHTS when training fine-tunes from them.\n\n"
      << "Signals: SIGINT/SIGTERM stop with a checkpoint (exit 130/143), SIGUSR1 pause, SIGUSR2/SIGCONT\n"
      << "resume, SIGHUP checkpoint now, Ctrl+Z pause and suspend (fg resumes). Exit 75: stopped to be\n"
      << "resumed (deadline, pause_release=exit, preemption= notice); 1: runtime error; 2: bad arguments.\n\n"
      << "Arguments (key=value; cfg=file.yaml loads a file first):\n";
  for (const auto& a : TrainConfig::describe()) {
    std::printf("  %-18s %-16s %s\n", a.name.c_str(), ("[" + a.default_value + "]").c_str(), a.help.c_str());
  }
  std::cout << "\nPredict arguments:\n";
  for (const auto& [name, value, help] : yolotrain::predict::PredictConfig::describe()) {
    std::printf("  %-18s %-16s %s\n", name.c_str(), ("[" + value + "]").c_str(), help.c_str());
  }
  std::cout << "\nExport arguments:\n";
  for (const auto& [name, value, help] : yolotrain::exporter::ExportConfig::describe()) {
    std::printf("  %-18s %-16s %s\n", name.c_str(), ("[" + value + "]").c_str(), help.c_str());
  }
}

int run_predict(const std::vector<std::string>& args) {
  const auto config = yolotrain::predict::PredictConfig::from_args(args);
  yolotrain::lifecycle::ControlToken token;
  yolotrain::lifecycle::SignalBinding signals(token);
  const int code = yolotrain::predict::run_predict(config, token).exit_code();
  signals.ignore_from_now();  // a late signal must not turn this exit status into "killed"
  return code;
}

int run_export(const std::vector<std::string>& args) {
  const auto config = yolotrain::exporter::ExportConfig::from_args(args);
  try {
    yolotrain::exporter::run_export(config);
  } catch (const yolotrain::engine::ConfigError&) {
    throw;
  } catch (const yolotrain::Error& e) {
    throw yolotrain::engine::ConfigError(e.what());  // weights that cannot be read or written: the input must change
  }
  return 0;
}

int run_val(const std::vector<std::string>& args) {
  const TrainConfig config = yolotrain::engine::val_config(args);
  yolotrain::lifecycle::ControlToken token;
  yolotrain::lifecycle::SignalBinding signals(token);
  const yolotrain::engine::ValidationReport r = yolotrain::engine::validate(config, &token);
  signals.ignore_from_now();  // a late signal must not turn this exit status into "killed"
  std::cout << r.table(config.verbose);
  std::printf("Speed: %.1f ms per image (%lld images in %.2f s)\n",
              r.images ? 1000.0 * r.seconds / double(r.images) : 0.0, static_cast<long long>(r.images), r.seconds);
  for (const auto& w : r.plot_warnings) std::cout << "WARNING plot " << w << "\n";
  if (!r.save_dir.empty()) std::cout << "Results saved to " << r.save_dir.string() << std::endl;
  return 0;
}

int run_train(const std::vector<std::string>& args) {
  const TrainConfig config = TrainConfig::from_args(args);
  yolotrain::lifecycle::ControlToken token;
  yolotrain::lifecycle::SignalBindingOptions signal_options;
  signal_options.mapping = config.signal_mapping();
  yolotrain::lifecycle::SignalBinding signals(token, signal_options);
  // Once the run is over (its "completed" line printed), a late signal must not kill the process
  // nor force an exit: the exit status is the run's.
  yolotrain::engine::TrainerCallbacks callbacks;
  callbacks.on_train_end = [&signals](const yolotrain::engine::RunResult&) { signals.ignore_from_now(); };
  yolotrain::engine::Trainer trainer(config, callbacks);
  const yolotrain::engine::RunResult r = trainer.run(token);
  if (r.outcome == yolotrain::engine::RunOutcome::Failed) std::cerr << "yolo_train: error: " << r.reason << std::endl;
  return r.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  yolotrain::engine::prefer_avx512_kernels();  // before ATen's first CPU kernel
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h" || a == "help") {
      print_help();
      return 0;
    }
  }
  std::string mode = "train";
  if (!args.empty() && args[0].find('=') == std::string::npos) {
    mode = args[0];
    args.erase(args.begin());
  }
  try {
    if (mode == "train") return run_train(args);
    if (mode == "val") return run_val(args);
    if (mode == "predict") return run_predict(args);
    if (mode == "export") return run_export(args);
    throw yolotrain::engine::ConfigError("unknown mode '" + mode + "'; use train, val, predict or export (see --help)");
  } catch (const yolotrain::engine::ConfigError& e) {
    std::cerr << "yolo_train: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "yolo_train: error: " << e.what() << std::endl;
    return 1;
  }
}
