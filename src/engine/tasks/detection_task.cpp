// Detection (YOLOv8, YOLO11), the first Task: Ultralytics' DetectionTrainer's loss
// (v8DetectionLoss: box, cls, dfl), its DetectionValidator's figures and its pictures.
#include "task.hpp"

#include "yolotrain/plots/batch_plots.hpp"

namespace yolotrain::engine {
namespace {

class DetectionTask : public Task {
 public:
  DetectionTask(const nn::DetectionModel& model, const TrainConfig& cfg)
      : criterion_(model, loss::LossGains{cfg.box, cfg.cls, cfg.dfl}) {}

  const std::vector<std::string>& loss_terms() const override {
    static const std::vector<std::string> terms = {"box_loss", "cls_loss", "dfl_loss"};
    return terms;
  }

  loss::LossOutput loss(const std::vector<at::Tensor>& outputs, const data::Batch& b,
                        torch::Device device) const override {
    const loss::Targets targets{b.batch_idx.to(device), b.cls.to(device), b.bboxes.to(device)};
    return criterion_(outputs, targets);
  }

  std::optional<ValidationReport> validate(ValidationPass pass) const override {
    pass.criterion = &criterion_;
    return run_validation(pass);
  }

  void fill_validation(EpochMetrics& m, const ValidationReport& r) const override {
    m.precision = r.metrics.mp;
    m.recall = r.metrics.mr;
    m.map50 = r.metrics.map50;
    m.map = r.metrics.map;
    m.fitness = r.metrics.fitness;
    m.val_box_loss = r.loss[0];
    m.val_cls_loss = r.loss[1];
    m.val_dfl_loss = r.loss[2];
  }

  void plot_training_batch(plots::PlotWriter& writer, const data::Batch& batch, const std::vector<std::string>& names,
                           const std::filesystem::path& dir) const override {
    plots::plot_training_batch(writer, batch, names, dir);
  }

  void plot_validation(plots::PlotWriter& writer, const ValidationReport& report,
                       const std::filesystem::path& dir) const override {
    plot_validation_results(writer, report, dir);
  }

 private:
  loss::DetectionLoss criterion_;
};

}  // namespace

std::unique_ptr<Task> make_task(const nn::DetectionModel& model, const TrainConfig& cfg) {
  return std::make_unique<DetectionTask>(model, cfg);
}

}  // namespace yolotrain::engine
