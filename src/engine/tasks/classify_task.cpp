// Classification (YOLOv8-cls, YOLO11-cls, YOLO26-cls): Ultralytics 8.4's ClassificationTrainer —
// v8ClassificationLoss (cross-entropy, the batch's mean: one `loss` term), the class-folder loaders
// with its classification transforms, ClassificationValidator's figures (top-1 and top-5 accuracy;
// fitness their mean) and its pictures (the Task defaults: the batch with each image's class, the confusion matrix).
#include <ATen/ATen.h>

#include "task.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::engine {
namespace {

const char* const kTop1 = "metrics/accuracy_top1";
const char* const kTop5 = "metrics/accuracy_top5";

class ClassifyTask : public Task {
 public:
  explicit ClassifyTask(const TrainConfig& cfg) : data_(cfg.data) {}

  const std::vector<std::string>& loss_terms() const override { return terms_; }

  std::vector<std::string> metric_keys() const override { return {kTop1, kTop5}; }

  // ClassificationDataset: each image whole through its transforms, in the loader's order.
  void configure_loaders(data::LoaderOptions& options, const data::Dataset& train,
                         const data::Dataset& val) const override {
    require_classes(train);
    require_classes(val);
    options.classify = true;
  }

  loss::LossOutput loss(const nn::HeadOutputs& h, const data::Batch& b, torch::Device device) const override {
    const at::Tensor loss = at::cross_entropy_loss(h.logits, b.cls.to(device, /*non_blocking=*/true));
    return {loss, loss.detach().reshape({1})};
  }

  std::optional<ValidationReport> validate(ValidationPass pass) const override {
    pass.criterion = [device = pass.device](const nn::HeadOutputs& h, const data::Batch& b) {
      return at::cross_entropy_loss(h.logits, b.cls.to(device)).reshape({1});
    };
    return run_classify_validation(pass);
  }

  bool plots_labels() const override { return false; }  // ClassificationTrainer draws no labels.jpg

  void fill_validation(EpochMetrics& m, const ValidationReport& r) const override {
    const metrics::ClassifyMetrics c = r.classify.value_or(metrics::ClassifyMetrics{});
    m.set(kTop1, c.top1);
    m.set(kTop5, c.top5);
    set_validation_losses(m, terms_, r);
    m.fitness = c.fitness();
  }

 private:
  void require_classes(const data::Dataset& set) const {
    if (!set.records.empty() && set.records.front().category >= 0) return;
    throw ConfigError("data=" + data_ + ": a classification model needs a classification dataset, a folder with "
                      "train/<class>/*.jpg and val/<class>/*.jpg (e.g. data=shapes-cls), but the " + set.split +
                      " split has box labels; give a folder of class folders, or a detection model (e.g. "
                      "model=yolo11n.yaml) for this dataset");
  }

  std::string data_;
  std::vector<std::string> terms_{"loss"};
};

}  // namespace

std::unique_ptr<Task> make_classify_task(const nn::DetectionModel& model, const TrainConfig& cfg) {
  // ClassificationTrainer.get_model: the run's dropout into the head's Dropout.
  if (cfg.dropout > 0) model->classifier()->drop->options.p(cfg.dropout);
  return std::make_unique<ClassifyTask>(cfg);
}

}  // namespace yolotrain::engine
