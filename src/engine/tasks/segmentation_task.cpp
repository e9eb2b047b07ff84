// Instance segmentation (YOLOv8-seg, YOLO11-seg, YOLO26-seg): Ultralytics 8.4's SegmentationTrainer
// — v8SegmentationLoss (box, seg, cls, dfl, sem; E2ELoss around it for YOLO26-seg), the loaders'
// masks at mask_ratio (overlap_mask: one index mask per image), SegmentationValidator's figures
// (box and mask P, R, mAP50, mAP50-95; fitness = the box's + the masks') and its pictures.
#include <optional>

#include "task.hpp"
#include "yolotrain/loss/segmentation_loss.hpp"
#include "yolotrain/plots/batch_plots.hpp"

namespace yolotrain::engine {
namespace {

loss::SegmentationOutputs one2many_outputs(const nn::HeadOutputs& h) {
  return {h.one2many, h.mask_coefficients, h.proto, h.semantic};
}

loss::SegmentationOutputs one2one_outputs(const nn::HeadOutputs& h) {
  return {h.one2one, h.one2one_mask_coefficients, h.proto, h.semantic};
}

loss::MaskTargets mask_targets(const data::Batch& b, torch::Device device) {
  return {b.masks.to(device), b.sem_masks.defined() ? b.sem_masks.to(device) : at::Tensor()};
}

class SegmentationTask : public Task {
 public:
  SegmentationTask(const nn::DetectionModel& model, const TrainConfig& cfg)
      : criterion_(recipe_loss_options(model, cfg), loss_gains(cfg), cfg.overlap_mask),
        overlap_(cfg.overlap_mask),
        mask_ratio_(static_cast<int>(cfg.mask_ratio)),
        data_(cfg.data) {
    terms_ = {"box_loss", "seg_loss", "cls_loss", model->head()->options.reg_max() > 1 ? "dfl_loss" : "l1_loss"};
    if (cfg.ultralytics84()) terms_.push_back("sem_loss");  // 8.4's fifth term (0 without a semantic head)
    if (model->head()->end2end())
      e2e_.emplace(recipe_loss_options(model, cfg), loss_gains(cfg), cfg.overlap_mask, cfg.epochs);
  }

  const std::vector<std::string>& loss_terms() const override { return terms_; }

  std::vector<std::string> metric_keys() const override {
    std::vector<std::string> keys = box_metric_keys("B");
    for (auto& k : box_metric_keys("M")) keys.push_back(std::move(k));
    return keys;
  }

  void configure_loaders(data::LoaderOptions& options, const data::Dataset& train,
                         const data::Dataset& val) const override {
    require_polygons(train, data_);
    require_polygons(val, data_);
    options.mask_ratio = mask_ratio_;
    options.overlap_mask = overlap_;
  }

  loss::LossOutput loss(const nn::HeadOutputs& h, const data::Batch& b, torch::Device device) const override {
    const loss::Targets targets = batch_targets(b, device);
    const loss::MaskTargets masks = mask_targets(b, device);
    loss::LossOutput out = e2e_ ? (*e2e_)(one2many_outputs(h), one2one_outputs(h), targets, masks)
                                : criterion_(one2many_outputs(h), targets, masks);
    out.items = out.items.slice(0, 0, static_cast<std::int64_t>(terms_.size()));  // 8.3: no sem_loss
    return out;
  }

  std::string graph_blocker() const override {
    return overlap_ ? "" : "overlap_mask=false gives one mask per box, a count that changes every step";
  }

  void start_epoch(std::int64_t epoch, std::int64_t epochs) override {
    (void)epochs;  // E2ESegmentationLoss took the run's epochs
    if (e2e_) e2e_->set_epoch(epoch);
  }

  std::optional<ValidationReport> validate(ValidationPass pass) const override {
    // An end-to-end head's validation loss is E2ELoss' items: the one-to-one branch's terms.
    pass.criterion = [this, device = pass.device](const nn::HeadOutputs& h, const data::Batch& b) {
      const loss::Targets targets = batch_targets(b, device);
      const loss::MaskTargets masks = mask_targets(b, device);
      const at::Tensor items = e2e_ ? e2e_->one2one()(one2one_outputs(h), targets, masks).items
                                    : criterion_(one2many_outputs(h), targets, masks).items;
      return items.slice(0, 0, static_cast<std::int64_t>(terms_.size()));
    };
    pass.overlap_mask = overlap_;
    return run_validation(pass);
  }

  void fill_validation(EpochMetrics& m, const ValidationReport& r) const override {
    set_box_figures(m, r.metrics, "B");
    const metrics::DetMetrics masks = r.mask_metrics.value_or(metrics::DetMetrics{});
    set_box_figures(m, masks, "M");
    set_validation_losses(m, terms_, r);
    m.fitness = r.metrics.fitness + masks.fitness;  // SegmentMetrics.fitness
  }

  void plot_training_batch(plots::PlotWriter& writer, const data::Batch& batch, const std::vector<std::string>& names,
                           const std::filesystem::path& dir) const override {
    plots::plot_training_batch(writer, batch, names, dir, overlap_);
  }

 private:
  loss::SegmentationLoss criterion_;
  std::optional<loss::E2ESegmentationLoss> e2e_;
  std::vector<std::string> terms_;
  bool overlap_;
  int mask_ratio_;
  std::string data_;
};

}  // namespace

std::unique_ptr<Task> make_segmentation_task(const nn::DetectionModel& model, const TrainConfig& cfg) {
  return std::make_unique<SegmentationTask>(model, cfg);
}

}  // namespace yolotrain::engine
