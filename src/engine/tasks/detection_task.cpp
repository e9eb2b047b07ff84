// Detection (YOLOv8, YOLO11, YOLO26), the first Task: Ultralytics' DetectionTrainer's loss
// (v8DetectionLoss: box, cls, dfl; 8.4: STAL in its assigner; an end-to-end head: E2ELoss, whose
// weights follow the epoch, and l1 in dfl's place with reg_max 1), its DetectionValidator's
// figures and its pictures.
#include "task.hpp"

#include <optional>

#include "yolotrain/loss/e2e_loss.hpp"


namespace yolotrain::engine {
namespace {

class DetectionTask : public Task {
 public:
  DetectionTask(const nn::DetectionModel& model, const TrainConfig& cfg)
      : criterion_(recipe_loss_options(model, cfg), loss_gains(cfg)),
        terms_{"box_loss", "cls_loss", model->head()->options.reg_max() > 1 ? "dfl_loss" : "l1_loss"} {
    if (model->head()->end2end()) e2e_.emplace(recipe_loss_options(model, cfg), loss_gains(cfg), cfg.epochs);
  }

  const std::vector<std::string>& loss_terms() const override { return terms_; }

  std::vector<std::string> metric_keys() const override { return box_metric_keys("B"); }

  loss::LossOutput loss(const nn::HeadOutputs& outputs, const data::Batch& b, torch::Device device) const override {
    const loss::Targets targets = batch_targets(b, device);
    return e2e_ ? (*e2e_)(outputs.one2many, outputs.one2one, targets) : criterion_(outputs.one2many, targets);
  }

  std::string graph_blocker() const override { return ""; }

  void start_epoch(std::int64_t epoch, std::int64_t epochs) override {
    (void)epochs;  // E2ELoss took the run's epochs
    if (e2e_) e2e_->set_epoch(epoch);
  }

  std::optional<ValidationReport> validate(ValidationPass pass) const override {
    // An end-to-end head's validation loss is E2ELoss' items: the one-to-one branch's terms.
    pass.criterion = [this, device = pass.device](const nn::HeadOutputs& heads, const data::Batch& b) {
      const loss::Targets targets = batch_targets(b, device);
      return e2e_ ? e2e_->one2one()(heads.one2one, targets).items : criterion_(heads.one2many, targets).items;
    };
    return run_validation(pass);
  }

  void fill_validation(EpochMetrics& m, const ValidationReport& r) const override {
    fill_box_validation(m, terms_, r);
  }

 private:
  loss::DetectionLoss criterion_;
  std::vector<std::string> terms_;
  std::optional<loss::E2ELoss> e2e_;
};

}  // namespace

std::unique_ptr<Task> make_detection_task(const nn::DetectionModel& model, const TrainConfig& cfg) {
  return std::make_unique<DetectionTask>(model, cfg);
}

}  // namespace yolotrain::engine
