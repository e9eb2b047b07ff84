// Pose (YOLOv8-pose, YOLO11-pose, YOLO26-pose): Ultralytics 8.4's PoseTrainer — v8PoseLoss (box,
// pose, kobj, cls, dfl) or, for a Pose26 head, PoseLoss26 with its RLE term (under E2ELoss for
// YOLO26), the loaders' keypoints with the data YAML's flip_idx, PoseValidator's figures (box and
// pose P, R, mAP50, mAP50-95 by OKS; fitness = the box's + the pose's) and its pictures.
#include <optional>

#include "task.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/loss/pose_loss.hpp"

namespace yolotrain::engine {
namespace {

loss::PoseOutputs pose_one2many(const nn::HeadOutputs& h) { return {h.one2many, h.keypoints, h.keypoint_sigma}; }

loss::PoseOutputs pose_one2one(const nn::HeadOutputs& h) {
  return {h.one2one, h.one2one_keypoints, h.one2one_keypoint_sigma};
}

std::string shape_text(const std::vector<int64_t>& s) {
  return "[" + std::to_string(s.at(0)) + ", " + std::to_string(s.at(1)) + "]";
}

class PoseTask : public Task {
 public:
  PoseTask(const nn::DetectionModel& model, const TrainConfig& cfg, const data::DataConfig& data)
      : kpt_shape_(model->head()->options.kpt_shape()),
        sigmas_(data.kpt_oks_sigmas),
        flip_idx_(data.flip_idx),
        data_(cfg.data),
        criterion_(recipe_loss_options(model, cfg), loss_gains(cfg), pose_options(model, data), pose_gains(cfg),
                   model->head()->flow_model) {
    const bool rle = static_cast<bool>(model->head()->flow_model);
    terms_ = {"box_loss", "pose_loss", "kobj_loss", "cls_loss",
              model->head()->options.reg_max() > 1 ? "dfl_loss" : "l1_loss"};
    if (rle) terms_.push_back("rle_loss");
    if (model->head()->end2end()) {
      e2e_.emplace(recipe_loss_options(model, cfg), loss_gains(cfg), pose_options(model, data), pose_gains(cfg),
                   model->head()->flow_model, cfg.epochs);
    }
    flips_ = cfg.fliplr > 0 || cfg.flipud > 0;
  }

  const std::vector<std::string>& loss_terms() const override { return terms_; }

  std::vector<std::string> metric_keys() const override {
    std::vector<std::string> keys = box_metric_keys("B");
    for (auto& k : box_metric_keys("P")) keys.push_back(std::move(k));
    return keys;
  }

  std::vector<std::string> setup_warnings() const override {
    if (!flips_ || !flip_idx_.empty()) return {};
    return {"WARNING No 'flip_idx' array defined in data.yaml, disabling 'fliplr' and 'flipud' augmentations."};
  }

  // v8_transforms: RandomFlip with the YAML's flip_idx; no flip_idx means no flips at all.
  void configure_loaders(data::LoaderOptions& options, const data::Dataset& train,
                         const data::Dataset& val) const override {
    require_keypoints(train);
    require_keypoints(val);
    options.hyp.flip_idx = flip_idx_;
    if (flip_idx_.empty()) options.hyp.fliplr = options.hyp.flipud = 0;
  }

  loss::LossOutput loss(const nn::HeadOutputs& h, const data::Batch& b, torch::Device device) const override {
    const loss::Targets targets = batch_targets(b, device);
    const at::Tensor keypoints = b.keypoints.to(device, /*non_blocking=*/true);
    return e2e_ ? (*e2e_)(pose_one2many(h), pose_one2one(h), targets, keypoints)
                : criterion_(pose_one2many(h), targets, keypoints);
  }

  void start_epoch(std::int64_t epoch, std::int64_t epochs) override {
    (void)epochs;  // E2EPoseLoss took the run's epochs
    if (e2e_) e2e_->set_epoch(epoch);
  }

  std::optional<ValidationReport> validate(ValidationPass pass) const override {
    // An end-to-end head's validation loss is E2ELoss' items: the one-to-one branch's terms.
    pass.criterion = [this, device = pass.device](const nn::HeadOutputs& h, const data::Batch& b) {
      const loss::Targets targets = batch_targets(b, device);
      const at::Tensor keypoints = b.keypoints.to(device);
      return e2e_ ? e2e_->one2one()(pose_one2one(h), targets, keypoints).items
                  : criterion_(pose_one2many(h), targets, keypoints).items;
    };
    pass.oks_sigmas = sigmas_;
    return run_validation(pass);
  }

  void fill_validation(EpochMetrics& m, const ValidationReport& r) const override {
    set_box_figures(m, r.metrics, "B");
    const metrics::DetMetrics pose = r.pose_metrics.value_or(metrics::DetMetrics{});
    set_box_figures(m, pose, "P");
    set_validation_losses(m, terms_, r);
    m.fitness = r.metrics.fitness + pose.fitness;  // PoseMetrics.fitness
  }

 private:
  static loss::PoseLossOptions pose_options(const nn::DetectionModel& model, const data::DataConfig& data) {
    return loss::PoseLossOptions::of(model->head()->options.kpt_shape(), model->head()->options.pose26(),
                                     data.kpt_oks_sigmas);
  }

  static loss::PoseGains pose_gains(const TrainConfig& cfg) { return {cfg.pose, cfg.kobj, cfg.rle}; }

  // The model's keypoints are the dataset's: built with its kpt_shape (trainer_setup), so a split
  // read without them, or with others, is the wrong dataset.
  void require_keypoints(const data::Dataset& set) const {
    if (set.kpt_shape && std::vector<int64_t>{(*set.kpt_shape)[0], (*set.kpt_shape)[1]} == kpt_shape_) return;
    throw ConfigError("data=" + data_ + ": a pose model needs a pose dataset (its data.yaml names kpt_shape, e.g. "
                      "kpt_shape: [17, 3], and its labels carry the keypoints), but the " + set.split + " split " +
                      (set.kpt_shape ? "has kpt_shape [" + std::to_string((*set.kpt_shape)[0]) + ", " +
                                           std::to_string((*set.kpt_shape)[1]) + "] and the model " +
                                           shape_text(kpt_shape_)
                                     : std::string("has none")) +
                      "; give a pose dataset (e.g. coco8-pose or data=shapes-pose)");
  }

  std::vector<int64_t> kpt_shape_;
  std::vector<double> sigmas_;
  std::vector<int> flip_idx_;
  std::string data_;
  bool flips_ = false;
  loss::PoseLoss criterion_;
  std::optional<loss::E2EPoseLoss> e2e_;
  std::vector<std::string> terms_;
};

}  // namespace

std::unique_ptr<Task> make_pose_task(const nn::DetectionModel& model, const TrainConfig& cfg,
                                     const data::DataConfig& data) {
  return std::make_unique<PoseTask>(model, cfg, data);
}

}  // namespace yolotrain::engine
