// Detection (YOLOv8, YOLO11, YOLO26), the first Task: Ultralytics' DetectionTrainer's loss
// (v8DetectionLoss: box, cls, dfl; 8.4: STAL in its assigner; an end-to-end head: E2ELoss, whose
// weights follow the epoch, and l1 in dfl's place with reg_max 1), its DetectionValidator's
// figures and its pictures.
#include "task.hpp"

#include <optional>

#include "yolotrain/loss/e2e_loss.hpp"

#include "yolotrain/plots/batch_plots.hpp"

namespace yolotrain::engine {
namespace {

class DetectionTask : public Task {
 public:
  DetectionTask(const nn::DetectionModel& model, const TrainConfig& cfg)
      : criterion_(loss_options(model, cfg), gains(cfg)),
        terms_{"box_loss", "cls_loss", model->head()->options.reg_max() > 1 ? "dfl_loss" : "l1_loss"} {
    if (model->head()->end2end()) e2e_.emplace(loss_options(model, cfg), gains(cfg), cfg.epochs);
  }

  const std::vector<std::string>& loss_terms() const override { return terms_; }

  loss::LossOutput loss(const nn::HeadOutputs& outputs, const data::Batch& b, torch::Device device) const override {
    const loss::Targets targets{b.batch_idx.to(device), b.cls.to(device), b.bboxes.to(device)};
    return e2e_ ? (*e2e_)(outputs.one2many, outputs.one2one, targets) : criterion_(outputs.one2many, targets);
  }

  void start_epoch(std::int64_t epoch, std::int64_t epochs) override {
    (void)epochs;  // E2ELoss took the run's epochs
    if (e2e_) e2e_->set_epoch(epoch);
  }

  std::optional<ValidationReport> validate(ValidationPass pass) const override {
    pass.criterion = e2e_ ? &e2e_->one2one() : &criterion_;
    pass.criterion_on_one2one = e2e_.has_value();
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
    m.distance_loss = terms_[2];
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
  static loss::DetectionLossOptions loss_options(const nn::DetectionModel& model, const TrainConfig& cfg) {
    loss::DetectionLossOptions o = loss::DetectionLossOptions::of(model);
    o.stal = cfg.ultralytics84();  // STAL came with 8.4, for every model
    return o;
  }
  static loss::LossGains gains(const TrainConfig& cfg) { return {cfg.box, cfg.cls, cfg.dfl}; }

  loss::DetectionLoss criterion_;
  std::vector<std::string> terms_;
  std::optional<loss::E2ELoss> e2e_;
};

}  // namespace

std::unique_ptr<Task> make_task(const nn::DetectionModel& model, const TrainConfig& cfg) {
  if (model->task() == "segment") {
    throw ConfigError("model=" + cfg.model + " is a segmentation model (a " +
                      model->layer_kind(model->model->size() - 1).name +
                      " head): yolotrain builds and runs its network, but training segmentation (mask labels, "
                      "the mask loss) is not built yet; train a detection model (e.g. yolo11n.yaml)");
  }
  return std::make_unique<DetectionTask>(model, cfg);
}

}  // namespace yolotrain::engine
