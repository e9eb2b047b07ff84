#include "validation.hpp"

#include "run_folder.hpp"
#include "tasks/task.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "yolotrain/data/class_folders.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/engine/cpu_threads.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/io/ultralytics_pt.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/loss/pose_loss.hpp"
#include "yolotrain/metrics/masks.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/metrics/validator.hpp"
#include "yolotrain/nn/memory_format.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/plots/batch_plots.hpp"
#include "yolotrain/plots/plot_confusion.hpp"
#include "yolotrain/plots/plot_curves.hpp"

namespace yolotrain::engine {
namespace fs = std::filesystem;
namespace lc = lifecycle;

namespace {

std::vector<metrics::ImageInfo> image_infos(const data::Batch& b) {
  std::vector<metrics::ImageInfo> infos;
  for (std::size_t i = 0; i < b.ori_shape.size(); ++i) {
    const auto& rp = b.ratio_pad[i];
    infos.push_back({{b.ori_shape[i].first, b.ori_shape[i].second},
                     metrics::RatioPad{{rp.ratio_h, rp.ratio_w}, {rp.pad_x, rp.pad_y}}});
  }
  return infos;
}

// Ultralytics' row: "%22s" + "%11i" * 2 + "%11.3g" * 4 (8 with masks).
std::string table_row(const std::string& name, std::int64_t images, std::int64_t instances,
                      const std::vector<double>& v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%22s%11lld%11lld", name.c_str(), static_cast<long long>(images),
                static_cast<long long>(instances));
  std::string row = buf;
  for (double x : v) {
    std::snprintf(buf, sizeof(buf), "%11.3g", x);
    row += buf;
  }
  return row + "\n";
}

// The masks of each image's predictions (SegmentationValidator.postprocess: process_mask at the
// prototypes' resolution); nothing without prototypes.
std::vector<at::Tensor> prediction_masks(const std::vector<at::Tensor>& preds, const at::Tensor& proto,
                                         const data::Batch& b) {
  std::vector<at::Tensor> masks;
  if (!proto.defined()) return masks;
  const std::array<std::int64_t, 2> imgsz{b.img.size(2), b.img.size(3)};
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const at::Tensor& pred = preds[i];
    masks.push_back(
        metrics::process_mask(proto[static_cast<std::int64_t>(i)], pred.slice(1, 6), pred.slice(1, 0, 4), imgsz));
  }
  return masks;
}

// One image's predictions and labels into the validator; with masks, the label masks too
// (SegmentationValidator._prepare_batch).
void update_image(metrics::Validator& validator, const at::Tensor& pred, const data::Batch& b, std::int64_t i,
                  const metrics::ImageInfo& info, const at::Tensor& pred_masks, std::array<std::int64_t, 2> mask_hw,
                  bool overlap) {
  const std::array<std::int64_t, 2> imgsz{b.img.size(2), b.img.size(3)};
  const at::Tensor mine = b.batch_idx == static_cast<float>(i);
  const at::Tensor cls = b.cls.reshape({-1}).index({mine}), boxes = b.bboxes.index({mine});
  if (!pred_masks.defined()) return validator.update(pred, cls, boxes, imgsz, info);
  const at::Tensor gt = overlap ? b.masks[i] : b.masks.index({mine});
  const at::Tensor gt_masks = metrics::label_masks(gt, cls.size(0), overlap, mask_hw);
  validator.update(pred.slice(1, 0, 6), cls, boxes, imgsz, info, pred_masks, gt_masks);
}

// One image's predictions (with their keypoints after the 6 box columns) and labels (with theirs)
// into the validator (PoseValidator._prepare_batch / _process_batch).
void update_pose_image(metrics::Validator& validator, const at::Tensor& pred, const data::Batch& b, std::int64_t i,
                       const metrics::ImageInfo& info, const std::vector<int64_t>& kpt_shape,
                       const at::Tensor& sigmas) {
  const std::array<std::int64_t, 2> imgsz{b.img.size(2), b.img.size(3)};
  const at::Tensor mine = b.batch_idx == static_cast<float>(i);
  const at::Tensor cls = b.cls.reshape({-1}).index({mine}), boxes = b.bboxes.index({mine});
  const at::Tensor keypoints = pred.slice(1, 6).reshape({-1, kpt_shape[0], kpt_shape[1]});
  validator.update_keypoints(pred.slice(1, 0, 6), cls, boxes, imgsz, info, keypoints, b.keypoints.index({mine}),
                             sigmas);
}

std::int64_t at_or_zero(const std::vector<std::int64_t>& v, std::int64_t i) {
  return i >= 0 && static_cast<std::size_t>(i) < v.size() ? v[static_cast<std::size_t>(i)] : 0;
}

}  // namespace

std::vector<std::pair<std::string, const metrics::DetMetrics*>> ValidationReport::metric_sets() const {
  if (classify) return {};
  std::vector<std::pair<std::string, const metrics::DetMetrics*>> sets{{"Box", &metrics}};
  if (mask_metrics) sets.emplace_back("Mask", &*mask_metrics);
  if (pose_metrics) sets.emplace_back("Pose", &*pose_metrics);
  return sets;
}

std::string ValidationReport::table(bool per_class) const {
  // The validators' headers: Box(P R mAP50 mAP50-95), then Mask(...) or Pose(...) for their tasks.
  std::string out;
  char cell[64];
  if (classify) {  // ClassificationValidator: get_desc() and print_results()
    std::snprintf(cell, sizeof(cell), "%22s%11s%11s\n", "classes", "top1_acc", "top5_acc");
    out += cell;
    std::snprintf(cell, sizeof(cell), "%22s%11.3g%11.3g\n", "all", classify->top1, classify->top5);
    return out + cell;
  }
  std::snprintf(cell, sizeof(cell), "%22s%11s%11s", "Class", "Images", "Instances");
  out += cell;
  for (const auto& set : metric_sets()) {
    std::snprintf(cell, sizeof(cell), "%11s%11s%11s%11s", (set.first + "(P").c_str(), "R", "mAP50", "mAP50-95)");
    out += cell;
  }
  out += "\n";
  std::int64_t instances = 0;
  for (auto n : instances_per_class) instances += n;
  const auto figures = [&](const metrics::DetMetrics& m, std::optional<std::size_t> i) {
    return i ? std::vector<double>{m.p[*i], m.r[*i], m.ap50[*i], m.ap[*i]}
             : std::vector<double>{m.mp, m.mr, m.map50, m.map};
  };
  const auto row_figures = [&](std::optional<std::size_t> i) {
    std::vector<double> v;
    for (const auto& set : metric_sets()) {
      const std::vector<double> m = figures(*set.second, i);
      v.insert(v.end(), m.begin(), m.end());
    }
    return v;
  };
  out += table_row("all", images, instances, row_figures(std::nullopt));
  if (!per_class || names.size() < 2) return out;
  for (std::size_t i = 0; i < metrics.ap_class_index.size(); ++i) {
    const std::int64_t c = metrics.ap_class_index[i];
    const std::string name = c >= 0 && static_cast<std::size_t>(c) < names.size() ? names[c] : std::to_string(c);
    out += table_row(name, at_or_zero(images_per_class, c), at_or_zero(instances_per_class, c), row_figures(i));
  }
  return out;
}

loss::Targets batch_targets(const data::Batch& b, torch::Device device) {
  // non_blocking: from the loader's page-locked memory (pin_memory on CUDA) the copies are queued
  // behind the step's kernels instead of waiting for them; elsewhere they are ordinary copies.
  return {b.batch_idx.to(device, /*non_blocking=*/true), b.cls.to(device, /*non_blocking=*/true),
          b.bboxes.to(device, /*non_blocking=*/true),
          b.targets.defined() ? b.targets.to(device, /*non_blocking=*/true) : at::Tensor()};
}

void require_polygons(const data::Dataset& set, const std::string& data) {
  const std::size_t boxes = set.boxes(), outlines = set.outlines();
  if (boxes == outlines) return;
  throw ConfigError("data=" + data + ": a segmentation model needs polygon labels (class x1 y1 x2 y2 ...) for "
                    "every instance, but the " + set.split + " split has " + std::to_string(boxes) + " boxes and " +
                    std::to_string(outlines) + " polygons; give a segmentation dataset (e.g. coco128-seg or "
                    "data=shapes-seg)");
}

void require_corners(const data::Dataset& set, const std::string& data) {
  const std::size_t boxes = set.boxes(), outlines = set.outlines();
  if (boxes == outlines) return;
  throw ConfigError("data=" + data + ": an OBB model needs oriented labels (class x1 y1 x2 y2 x3 y3 x4 y4, the "
                    "corners normalized) for every instance, but the " + set.split + " split has " +
                    std::to_string(boxes - outlines) + " upright boxes (class x y w h) among " +
                    std::to_string(boxes) + "; give an OBB dataset (e.g. data=shapes-obb, or DOTA in YOLO format)");
}

metrics::UltralyticsRules rules_for(const std::string& compat) {
  return compat == "8.3" ? metrics::UltralyticsRules::V83 : metrics::UltralyticsRules::V84;
}

bool for_each_batch(ValidationPass& pass, ValidationReport& report,
                    const std::function<void(const nn::HeadOutputs&, const data::Batch&)>& visit) {
  std::int64_t batches = 0;
  const auto stopped = [&] { return pass.token && pass.token->stop_requested(); };
  pass.loader->seek(0, 0);
  while (auto b = pass.loader->next()) {
    if (stopped()) break;
    const nn::HeadOutputs heads =
        pass.net->forward_heads(data::preprocess_images(b->img, pass.device).contiguous(pass.memory_format));
    if (pass.criterion) {
      const at::Tensor items = pass.criterion(heads, *b).to(torch::kCPU, torch::kDouble).reshape({-1});
      report.loss.resize(static_cast<std::size_t>(items.numel()), 0.0);
      for (std::size_t i = 0; i < report.loss.size(); ++i) report.loss[i] += items[std::int64_t(i)].item<double>();
    }
    ++batches;
    visit(heads, *b);
  }
  if (stopped()) return false;  // a loader wait ended on the stop, or the loop broke: not validated
  for (auto& l : report.loss) l /= double(std::max<std::int64_t>(batches, 1));
  return true;
}

std::optional<ValidationReport> run_validation(ValidationPass pass) {
  const auto started = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  const bool was_training = pass.net->is_training();
  pass.net->eval();
  metrics::Validator validator(pass.net->nc(), pass.rules);
  const bool obb = pass.net->head()->rotated();
  metrics::NmsOptions nms;
  nms.conf = obb ? 0.01 : 0.001;  // BaseValidator: 0.01 for OBB ("reduce OBB val memory usage"), else 0.001
  nms.iou = pass.iou;
  nms.max_det = pass.max_det;
  nms.multi_label = true;
  nms.agnostic = pass.agnostic;
  nms.end2end = pass.net->head()->end2end();  // YOLO26: the one-to-one branch's top-k, no NMS
  const bool segment = pass.net->head()->segments(), pose = pass.net->head()->keypoints();
  nms.rotated = obb;  // OBBValidator: rotated NMS, rows x y w h conf cls angle
  if (segment || pose || obb) nms.nc = pass.net->nc();  // the mask coefficients, keypoints or angle ride along
  const std::vector<int64_t> kpt_shape = pass.net->head()->options.kpt_shape();
  at::Tensor sigmas;
  if (pose) {
    const std::vector<double> s = loss::oks_sigmas(kpt_shape, pass.oks_sigmas);
    sigmas = at::tensor(std::vector<float>(s.begin(), s.end()));
  }
  ValidationReport report;
  const bool finished = for_each_batch(pass, report, [&](const nn::HeadOutputs& heads, const data::Batch& b) {
    std::vector<at::Tensor> preds = metrics::non_max_suppression(pass.net->head()->inference(heads), nms);
    std::vector<at::Tensor> boxes;  // x1 y1 x2 y2 conf cls, without mask coefficients (OBB: with the angle)
    for (auto& p : preds) p = p.to(torch::kCPU), boxes.push_back(obb ? p : p.slice(1, 0, 6));
    const at::Tensor proto = segment ? heads.proto.to(torch::kCPU, torch::kFloat) : at::Tensor();
    const std::vector<at::Tensor> masks = prediction_masks(preds, proto, b);
    if (pass.plots && b.index < 3) {
      std::vector<at::Tensor> keypoints;  // a pose model's, per image [n, k, dims] in the batch's pixels
      for (const auto& p : preds) {
        if (pose) keypoints.push_back(p.slice(1, 6).reshape({-1, kpt_shape[0], kpt_shape[1]}));
      }
      plots::plot_validation_batch(*pass.plots, b, boxes, pass.net->names(), pass.plot_dir, pass.max_det, masks,
                                   pass.overlap_mask, keypoints);
    }
    const std::vector<metrics::ImageInfo> infos = image_infos(b);
    for (std::size_t i = 0; i < preds.size(); ++i) {
      const auto image = static_cast<std::int64_t>(i);
      if (pose) {
        update_pose_image(validator, preds[i], b, image, infos[i], kpt_shape, sigmas);
      } else if (obb) {
        const at::Tensor mine = b.batch_idx == static_cast<float>(i);
        validator.update_rotated(preds[i], b.cls.reshape({-1}).index({mine}), b.bboxes.index({mine}),
                                 {b.img.size(2), b.img.size(3)}, infos[i]);
      } else {
        update_image(validator, preds[i], b, image, infos[i], segment ? masks[i] : at::Tensor(),
                     {segment ? proto.size(2) : 0, segment ? proto.size(3) : 0}, pass.overlap_mask);
      }
    }
  });
  if (was_training) pass.net->train();
  if (!finished) return std::nullopt;
  report.metrics = validator.finalize();
  if (segment) report.mask_metrics = validator.finalize_masks();
  if (pose) report.pose_metrics = validator.finalize_masks();  // the second matching: by OKS
  report.names = pass.net->names();
  report.images = validator.seen();
  report.instances_per_class = validator.nt_per_class();
  report.images_per_class = validator.nt_per_image();
  if (const metrics::ConfusionMatrix* cm = validator.confusion_matrix()) report.confusion = *cm;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

io::ModelWeights load_val_weights(const TrainConfig& cfg) {
  try {  // a missing file too: read_model_weights names it
    return io::read_model_weights(cfg.model);
  } catch (const Error& e) {
    throw ConfigError(e.what());
  }
}

// What Ultralytics' model.val() takes from a .pt's train_args: imgsz, single_cls, and the
// dataset when it exists here.
void take_ultralytics_args(const std::string& path, TrainConfig& cfg) {
  const io::UltralyticsCheckpoint pt = io::read_ultralytics_pt(path);
  for (const char* key : {"imgsz", "single_cls", "data"}) {
    const auto it = pt.train_args.find(key);
    if (it == pt.train_args.end() || it->second == "None") continue;
    if (std::string(key) == "data" && !fs::exists(it->second)) continue;  // a data.yaml, or a class folder
    cfg.set(key, it->second);
  }
}

}  // namespace

void plot_validation_results(plots::PlotWriter& writer, const ValidationReport& report, const fs::path& dir) {
  const std::vector<std::string> names = report.names;  // the jobs keep copies: the report may go first
  if (report.confusion) {
    const metrics::ConfusionMatrix cm = *report.confusion;
    writer.submit_text(dir / "confusion_matrix.csv", cm.to_csv(names));
    for (const bool normalize : {true, false}) {  // Ultralytics' order
      writer.submit(dir / plots::confusion_matrix_file(normalize),
                    [=] { return plots::plot_confusion_matrix(cm, names, normalize); });
    }
  }
  // A segmentation or pose model's curves come twice, "Box" and "Mask" or "Pose" before the names
  // (SegmentMetrics' and PoseMetrics' prefixes); detection's have none (8.0-8.3's DetMetrics).
  std::vector<std::pair<std::string, metrics::DetMetrics>> sets;
  for (const auto& [title, m] : report.metric_sets()) sets.emplace_back(title, *m);
  if (sets.size() == 1) sets[0].first.clear();
  for (const auto& [prefix, metrics] : sets) {
    writer.submit(dir / (prefix + "PR_curve.png"), [=, m = metrics] { return plots::plot_pr_curve(m, names); });
    for (const auto which : {plots::Curve::F1, plots::Curve::Precision, plots::Curve::Recall}) {
      writer.submit(dir / (prefix + plots::curve_file(which)),
                    [=, m = metrics] { return plots::plot_mc_curve(m, names, which); });
    }
  }
}

TrainConfig val_config(const std::vector<std::string>& args) {
  TrainConfig cfg;
  for (const auto& a : args) {
    if (a.rfind("model=", 0) == 0 && ends_with(a, ".ytckpt") && fs::is_regular_file(a.substr(6))) {
      cfg.load_yaml_text(lc::CheckpointStore::read_meta(a.substr(6)).config, a.substr(6));  // no tensors
      cfg.verbose = true;  // the per-class table, whatever the training run printed
      // The pictures too, whatever it drew: Ultralytics' val keeps only imgsz, data, task and
      // single_cls of the checkpoint's arguments (engine/model.py _reset_ckpt_args), plots is its own.
      cfg.plots = TrainConfig().plots;
    }
    if (a.rfind("model=", 0) == 0 && ends_with(a, ".pt") && fs::is_regular_file(a.substr(6))) {
      try {
        take_ultralytics_args(a.substr(6), cfg);
      } catch (const Error& e) {
        throw ConfigError(e.what());
      }
    }
  }
  cfg.name = "val";  // not the training run's folder
  cfg.exist_ok = false;
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos) throw ConfigError("'" + a + "': arguments are key=value (see yolo_train --help)");
    cfg.set(a.substr(0, eq), a.substr(eq + 1));
  }
  return cfg;
}

ValidationReport validate(const TrainConfig& cfg, const lc::ControlToken* token) {
  const io::ModelWeights weights = load_val_weights(cfg);
  use_cpu_threads(intra_op_threads(cfg.threads));
  const fs::path yaml = data_yaml(cfg);  // data=shapes: the built-in set of the run's project
  if (!fs::exists(yaml)) {
    throw ConfigError("data=" + cfg.data + ": no such file or folder; give the dataset's data.yaml (a "
                      "classification dataset: its folder of class folders)");
  }
  const data::DataConfig data_config = data::load_dataset_config(yaml);
  data::Dataset set = data::load_split(data_config, data_config.has("val") ? "val" : "train");
  const std::int64_t nc = weights.nc;
  if (cfg.single_cls) merge_classes(set);
  const std::vector<std::string>& names = set.names;
  if (static_cast<std::int64_t>(names.size()) != nc) {
    throw ConfigError("model=" + cfg.model + " predicts " + std::to_string(nc) + " classes but data=" + cfg.data +
                      " has " + std::to_string(names.size()) + "; validate on the dataset it was trained on");
  }
  const torch::Device device = run_device(cfg.device);
  nn::DetectionModel net(
      nn::DetectionModelOptions(weights.model_yaml).nc(nc).names(names).ultralytics(weights.builds_like).kpt_shape(
          kpt_shape_of(data_config)));
  require_task_labels(net->task(), data_config, cfg.data);
  nn::load_state_dict(*net, weights.tensors, true, cfg.model);
  const bool classify = net->task() == "classify";
  if (!cfg.end2end && !classify) net->head()->set_end2end(false);  // Ultralytics' end2end=False: NMS over one-to-many
  net->to(device);
  const c10::MemoryFormat format = device.is_cpu() ? nn::preferred_cpu_memory_format() : c10::MemoryFormat::Contiguous;
  nn::set_memory_format(*net, format);
  data::LoaderOptions opts;
  opts.batch = static_cast<int>(cfg.batch);
  opts.imgsz = static_cast<int>(nn::check_imgsz(cfg.imgsz, net->max_stride()));
  opts.stride = static_cast<int>(net->max_stride());
  opts.workers = loader_workers(cfg);
  opts.augment = false;
  opts.shuffle = false;
  opts.rect = true;
  opts.pin_memory = device.is_cuda();
  opts.token = token;
  opts.classify = classify;  // ClassificationValidator's centre crops (no rect)
  const bool segment = !classify && net->head()->segments();
  if (segment) require_polygons(set, cfg.data);
  opts.obb = !classify && net->head()->rotated();  // OBBValidator: each label's rotated box from its corners
  if (opts.obb) require_corners(set, cfg.data);
  if (segment) {
    opts.mask_ratio = static_cast<int>(cfg.mask_ratio);
    opts.overlap_mask = cfg.overlap_mask;
  }
  data::Loader loader(set, opts);
  // The validation loss (v8DetectionLoss); none for an end-to-end head (Ultralytics' own `val`
  // reports no loss at all; training's validation reports E2ELoss' one-to-one terms) nor for a
  // segmentation, pose or classification model.
  std::optional<loss::DetectionLoss> criterion;
  const bool boxes_only = !classify && !segment && !net->head()->keypoints() && !opts.obb;
  if (boxes_only && !net->head()->options.end2end()) criterion.emplace(net, loss::LossGains{cfg.box, cfg.cls, cfg.dfl});
  std::unique_ptr<plots::PlotWriter> writer;
  fs::path save_dir;
  std::string folder_warning;  // a folder that cannot be made costs the pictures, not the validation
  try {
    if (cfg.plots) save_dir = make_run_dir(cfg.project, cfg.name, cfg.exist_ok, "");
  } catch (const std::exception& e) {
    folder_warning = "folder " + (fs::path(cfg.project) / cfg.name).string() + " not made: " + e.what();
  }
  if (!save_dir.empty()) writer = std::make_unique<plots::PlotWriter>();
  ValidationPass pass{net,         &loader,        {},    device, format, cfg.iou,
                      cfg.max_det, cfg.single_cls, token, writer.get(), save_dir};
  if (criterion) {
    pass.criterion = [&](const nn::HeadOutputs& heads, const data::Batch& b) {
      return (*criterion)(heads.one2many, batch_targets(b, device)).items;
    };
  }
  pass.rules = rules_for(cfg.compat);
  pass.overlap_mask = cfg.overlap_mask;
  pass.oks_sigmas = data_config.kpt_oks_sigmas;
  std::optional<ValidationReport> report = classify ? run_classify_validation(pass) : run_validation(pass);
  if (!report) throw Error("validation stopped before it finished");
  if (!folder_warning.empty()) report->plot_warnings.push_back(folder_warning);
  if (writer) {
    plot_validation_results(*writer, *report, save_dir);
    writer->wait();
    report->plot_warnings = writer->take_warnings();
    report->save_dir = save_dir;
  }
  return *report;
}

}  // namespace yolotrain::engine
