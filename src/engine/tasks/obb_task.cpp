// Oriented boxes (YOLOv8-obb, YOLO11-obb, YOLO26-obb): Ultralytics 8.4's OBBTrainer — v8OBBLoss (box,
// cls, dfl or l1, and 8.4's angle term; E2ELoss around it for YOLO26-obb; 8.3's three terms under
// compat=8.3), the loaders' rotated boxes from the labels' corners (LoaderOptions::obb), OBBValidator's
// figures (P, R, mAP50, mAP50-95 matched by ProbIoU after rotated NMS; fitness DetMetrics') and its
// pictures (boxes drawn as their rotated corners).
#include <optional>

#include "task.hpp"
#include "yolotrain/loss/obb_loss.hpp"

namespace yolotrain::engine {
namespace {

loss::OBBOutputs obb_one2many(const nn::HeadOutputs& h) { return {h.one2many, h.angle}; }

loss::OBBOutputs obb_one2one(const nn::HeadOutputs& h) { return {h.one2one, h.one2one_angle}; }

loss::OBBLossOptions obb_options(const TrainConfig& cfg) {
  loss::OBBLossOptions o;
  o.angle = cfg.angle;
  o.v84 = cfg.ultralytics84();
  return o;
}

class OBBTask : public Task {
 public:
  OBBTask(const nn::DetectionModel& model, const TrainConfig& cfg)
      : criterion_(recipe_loss_options(model, cfg), loss_gains(cfg), obb_options(cfg)), data_(cfg.data) {
    terms_ = {"box_loss", "cls_loss", model->head()->options.reg_max() > 1 ? "dfl_loss" : "l1_loss"};
    if (cfg.ultralytics84()) terms_.push_back("angle_loss");
    if (model->head()->end2end()) e2e_.emplace(recipe_loss_options(model, cfg), loss_gains(cfg), obb_options(cfg),
                                               cfg.epochs);
  }

  const std::vector<std::string>& loss_terms() const override { return terms_; }

  std::vector<std::string> metric_keys() const override { return box_metric_keys("B"); }
  int val_batch_factor() const override { return 1; }  // DOTA's crowded images: no double batch

  void configure_loaders(data::LoaderOptions& options, const data::Dataset& train,
                         const data::Dataset& val) const override {
    require_corners(train, data_);
    require_corners(val, data_);
    options.obb = true;
  }

  loss::LossOutput loss(const nn::HeadOutputs& h, const data::Batch& b, torch::Device device) const override {
    const loss::Targets targets = obb_targets(b, device);
    return e2e_ ? (*e2e_)(obb_one2many(h), obb_one2one(h), targets) : criterion_(obb_one2many(h), targets);
  }

  void start_epoch(std::int64_t epoch, std::int64_t epochs) override {
    (void)epochs;  // E2EOBBLoss took the run's epochs
    if (e2e_) e2e_->set_epoch(epoch);
  }

  std::optional<ValidationReport> validate(ValidationPass pass) const override {
    // An end-to-end head's validation loss is E2ELoss' items: the one-to-one branch's terms.
    pass.criterion = [this, device = pass.device](const nn::HeadOutputs& h, const data::Batch& b) {
      const loss::Targets targets = obb_targets(b, device);
      return e2e_ ? e2e_->one2one()(obb_one2one(h), targets).items : criterion_(obb_one2many(h), targets).items;
    };
    return run_validation(pass);
  }

  void fill_validation(EpochMetrics& m, const ValidationReport& r) const override {
    fill_box_validation(m, terms_, r);
  }

 private:
  // The batch's rotated boxes (the OBB loss builds its own per-image rows; Batch::targets is not read).
  static loss::Targets obb_targets(const data::Batch& b, torch::Device device) {
    return {b.batch_idx.to(device, true), b.cls.to(device, true), b.bboxes.to(device, true), at::Tensor()};
  }

  loss::OBBLoss criterion_;
  std::optional<loss::E2EOBBLoss> e2e_;
  std::vector<std::string> terms_;
  std::string data_;
};

}  // namespace

std::unique_ptr<Task> make_obb_task(const nn::DetectionModel& model, const TrainConfig& cfg) {
  return std::make_unique<OBBTask>(model, cfg);
}

}  // namespace yolotrain::engine
