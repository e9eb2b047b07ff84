// What every task shares: the epoch's figures in results.csv's order, the box metrics' names, and
// which task a model trains for.
#include "task.hpp"

#include "yolotrain/error.hpp"
#include "yolotrain/plots/batch_plots.hpp"

namespace yolotrain::engine {

EpochMetrics Task::epoch_metrics() const {
  std::vector<std::string> names;
  for (const auto& term : loss_terms()) names.push_back("train/" + term);
  for (auto& key : metric_keys()) names.push_back(std::move(key));
  for (const auto& term : loss_terms()) names.push_back("val/" + term);
  for (const char* lr : {"lr/pg0", "lr/pg1", "lr/pg2"}) names.emplace_back(lr);
  return EpochMetrics::with_columns(names);
}

void Task::plot_training_batch(plots::PlotWriter& writer, const data::Batch& batch,
                               const std::vector<std::string>& names, const std::filesystem::path& dir) const {
  plots::plot_training_batch(writer, batch, names, dir);
}

void Task::plot_validation(plots::PlotWriter& writer, const ValidationReport& report,
                           const std::filesystem::path& dir) const {
  plot_validation_results(writer, report, dir);
}

loss::DetectionLossOptions recipe_loss_options(const nn::DetectionModel& model, const TrainConfig& cfg) {
  loss::DetectionLossOptions o = loss::DetectionLossOptions::of(model);
  o.stal = cfg.ultralytics84();  // STAL came with 8.4, for every model
  o.device_step = cfg.device_step;
  return o;
}

loss::LossGains loss_gains(const TrainConfig& cfg) { return {cfg.box, cfg.cls, cfg.dfl}; }

std::vector<std::string> box_metric_keys(const std::string& suffix) {
  const std::string s = "(" + suffix + ")";
  return {"metrics/precision" + s, "metrics/recall" + s, "metrics/mAP50" + s, "metrics/mAP50-95" + s};
}

void set_box_figures(EpochMetrics& m, const metrics::DetMetrics& metrics, const std::string& suffix) {
  const std::vector<std::string> keys = box_metric_keys(suffix);
  const double values[] = {metrics.mp, metrics.mr, metrics.map50, metrics.map};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!m.set(keys[i], values[i])) throw Error("the epoch has no figure " + keys[i] + " (Task::metric_keys())");
  }
}

void fill_box_validation(EpochMetrics& m, const std::vector<std::string>& terms, const ValidationReport& report) {
  set_box_figures(m, report.metrics, "B");
  set_validation_losses(m, terms, report);
  m.fitness = report.metrics.fitness;
}

void set_validation_losses(EpochMetrics& m, const std::vector<std::string>& terms, const ValidationReport& report) {
  for (std::size_t i = 0; i < terms.size() && i < report.loss.size(); ++i) m.set("val/" + terms[i], report.loss[i]);
}

namespace {

std::string task_noun(const std::string& task) {
  return task == "segment" ? "segmentation" : task == "obb" ? "OBB (oriented boxes)" : "detection";
}

}  // namespace

void require_task_labels(const std::string& task, const data::DataConfig& data, const std::string& data_arg) {
  if (task == "classify" && !data.classify) {
    throw ConfigError("data=" + data_arg + " is a data.yaml of labelled boxes, but the model is a classification "
                      "model, which trains on a folder of class folders (train/<class>/*.jpg, val/<class>/*.jpg; "
                      "e.g. data=shapes-cls); give such a folder, or a detection model (e.g. model=yolo11n.yaml)");
  }
  if (task != "classify" && data.classify) {
    throw ConfigError("data=" + data_arg + " is a classification dataset (a folder of class folders, no boxes), but "
                      "the model is a " + task + " model; give a -cls model (e.g. model=yolo11n-cls.yaml) or a "
                      "data.yaml of labelled images");
  }
  if (task == "pose" && !data.kpt_shape) {
    throw ConfigError("data=" + data_arg + ": no kpt_shape in it, but the model is a pose model, which needs a pose "
                      "dataset (kpt_shape: [17, 3] and flip_idx in its data.yaml, keypoints in its labels; e.g. "
                      "coco8-pose or data=shapes-pose)");
  }
  if (task == "pose" || !data.kpt_shape) return;
  const auto [n, dims] = *data.kpt_shape;
  throw ConfigError("data=" + data_arg + " names kpt_shape [" + std::to_string(n) + ", " + std::to_string(dims) +
                    "]: a pose dataset, whose labels carry keypoints, but the model is a " + task_noun(task) +
                    " model; give a -pose model (e.g. model=yolo11n-pose.yaml) or a " + task_noun(task) + " dataset");
}

std::vector<std::int64_t> kpt_shape_of(const data::DataConfig& data) {
  if (!data.kpt_shape) return {};
  return {(*data.kpt_shape)[0], (*data.kpt_shape)[1]};
}

std::unique_ptr<Task> make_task(const nn::DetectionModel& model, const TrainConfig& cfg, const data::DataConfig& data) {
  require_task_labels(model->task(), data, cfg.data);
  if (model->task() == "classify") return make_classify_task(model, cfg);
  if (model->task() == "pose") return make_pose_task(model, cfg, data);
  if (model->task() == "segment") return make_segmentation_task(model, cfg);
  if (model->task() == "obb") return make_obb_task(model, cfg);
  return make_detection_task(model, cfg);
}

}  // namespace yolotrain::engine
