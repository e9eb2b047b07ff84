// The step profile: ATen operators dispatched and sync-forcing / data-dependent-shape operators per
// steady-state training step (engine::profile_training_steps), for each model asked, with the step
// CUDA runs (device_step=true) unless told otherwise. Prints figures only; the budgets are a CTest
// (tests/unit/engine/step_profile_test.cpp).
// Run: build/bench/step_profile [models=yolov8n.yaml,yolo11n.yaml,yolo26n.yaml,yolov8n-seg.yaml]
//      [data=<shared>/datasets/coco128/data.yaml] [seg_data=<shared>/datasets/coco128-seg/data.yaml]
//      [imgsz=160] [batch=16] [warmup=1] [steps=5] [device_step=true] [optimizer=auto] [top=12]
// nbs is set to the batch, so that every step is an optimizer step.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "yolotrain/engine/step_profile.hpp"
#include "yolotrain/engine/train_config.hpp"

namespace en = yolotrain::engine;

namespace {

void print_top(const en::OperatorCounts& total, std::size_t steps, int top) {
  std::vector<std::pair<std::int64_t, std::string>> sorted;
  for (const auto& [name, count] : total.by_name) sorted.emplace_back(-count, name);
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < top && i < static_cast<int>(sorted.size()); ++i) {
    std::printf("    %-36s %8.1f per step\n", sorted[i].second.c_str(), double(-sorted[i].first) / double(steps));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string shared = YOLOTRAIN_SHARED_DIR;
  std::map<std::string, std::string> args = {{"models", "yolov8n.yaml,yolo11n.yaml,yolo26n.yaml,yolov8n-seg.yaml"},
                                             {"data", shared + "/datasets/coco128/data.yaml"},
                                             {"seg_data", shared + "/datasets/coco128-seg/data.yaml"},
                                             {"imgsz", "160"},
                                             {"batch", "16"},
                                             {"warmup", "1"},
                                             {"steps", "5"},
                                             {"device_step", "true"},
                                             {"optimizer", "auto"},
                                             {"top", "12"}};
  if (!yolotrain::bench::parse_args("step_profile", argc, argv, args)) return 2;
  for (const std::string& model : yolotrain::bench::split_list(args["models"])) {
    const bool seg = model.find("-seg") != std::string::npos;
    char dir[] = "/tmp/yolotrain-step-profile-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    const en::TrainConfig cfg = en::TrainConfig::from_args(
        {"model=" + model, "data=" + (seg ? args["seg_data"] : args["data"]), "imgsz=" + args["imgsz"],
         "batch=" + args["batch"], "nbs=" + args["batch"], "device_step=" + args["device_step"],
         "optimizer=" + args["optimizer"], "epochs=100", "val=false", "plots=false", "save_interval=0", "workers=2",
         "device=cpu", "verbose=false", "exist_ok=true", std::string("project=") + dir, "name=run"});
    const en::StepProfile p = en::profile_training_steps(cfg, std::stoi(args["warmup"]), std::stoi(args["steps"]));
    std::printf(
        "%s (imgsz %s, batch %s, device_step=%s, optimizer=%s): %.1f operators and %.1f syncs per step (most in a "
        "step: "
        "%lld) over %zu steps\n  %s\n",
        model.c_str(), args["imgsz"].c_str(), args["batch"].c_str(), args["device_step"].c_str(),
        args["optimizer"].c_str(), p.operators_per_step(), p.syncs_per_step(),
        static_cast<long long>(p.max_syncs_in_a_step()), p.steps.size(), p.total().summary().c_str());
    print_top(p.total(), p.steps.size(), std::stoi(args["top"]));
    std::fflush(stdout);
    const std::string rm = std::string("rm -rf ") + dir;
    if (std::system(rm.c_str()) != 0) return 1;
  }
  return 0;
}
