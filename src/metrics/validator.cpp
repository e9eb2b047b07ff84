#include "yolotrain/metrics/validator.hpp"

#include <string>

#include "yolotrain/error.hpp"
#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/metrics/ap.hpp"
#include "yolotrain/metrics/keypoints.hpp"
#include "yolotrain/metrics/masks.hpp"
#include "yolotrain/metrics/obb.hpp"

namespace yolotrain::metrics {

namespace {

at::Tensor cat_or_empty(const std::vector<at::Tensor>& parts, at::IntArrayRef empty_shape,
                        at::ScalarType dtype) {
  if (parts.empty()) return at::zeros(empty_shape, dtype);
  return at::cat(parts, 0);
}

}  // namespace

Validator::Validator(int64_t nc, UltralyticsRules rules) : nc_(nc), rules_(rules), iouv_(iou_thresholds()) {
  if (nc > 0) confusion_.emplace(nc);
}

void Validator::update(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_bboxes,
                       std::array<int64_t, 2> imgsz, const ImageInfo& info, const at::Tensor& pred_masks,
                       const at::Tensor& gt_masks) {
  if (pred_masks.defined() != gt_masks.defined()) throw Error("Validator::update: give both masks or neither");
  Similarity masks;
  if (pred_masks.defined()) {
    masks = [&](const at::Tensor&, const at::Tensor&) {
      return mask_iou(gt_masks.cpu().flatten(1).to(at::kFloat), pred_masks.cpu().flatten(1).to(at::kFloat));
    };
  }
  update_with(pred, gt_cls, gt_bboxes, imgsz, info, masks);
}

void Validator::update_keypoints(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_bboxes,
                                 std::array<int64_t, 2> imgsz, const ImageInfo& info, const at::Tensor& pred_keypoints,
                                 const at::Tensor& gt_keypoints, const at::Tensor& sigmas) {
  const bool original = rules_ == UltralyticsRules::V83;
  const Similarity oks = [&](const at::Tensor& gt_boxes, const at::Tensor&) {
    at::Tensor gt = gt_keypoints.cpu().to(at::kFloat).clone(), mine = pred_keypoints.cpu().to(at::kFloat).clone();
    gt.select(-1, 0).mul_(imgsz[1]);  // PoseValidator._prepare_batch: to the network input's pixels
    gt.select(-1, 1).mul_(imgsz[0]);
    if (original) {  // 8.3: both in the original image (scale_coords)
      scale_coords(imgsz, gt, info.ori_shape, info.ratio_pad);
      scale_coords(imgsz, mine, info.ori_shape, info.ratio_pad);
    }
    const at::Tensor wh = gt_boxes.slice(1, 2, 4) - gt_boxes.slice(1, 0, 2);
    return keypoint_oks(gt, mine, wh.prod(1) * 0.53, sigmas);  // cocoeval's area scale
  };
  update_with(pred, gt_cls, gt_bboxes, imgsz, info, oks);
}

void Validator::update_with(const at::Tensor& pred_in, const at::Tensor& gt_cls_in, const at::Tensor& gt_bboxes,
                            std::array<int64_t, 2> imgsz, const ImageInfo& info, const Similarity& second) {
  const bool masks = static_cast<bool>(second);
  const at::Tensor pred = pred_in.defined() ? pred_in.cpu() : at::zeros({0, 6});
  if (pred.dim() != 2 || pred.size(1) < 6) {
    throw Error("Validator::update: predictions must be [n, 6] (x1, y1, x2, y2, conf, cls), got " +
                c10::str(pred.sizes()));
  }
  const at::Tensor cls = gt_cls_in.reshape({-1}).to(at::kFloat).cpu();
  const int64_t nl = cls.size(0), npr = pred.size(0);
  if (gt_bboxes.numel() != nl * 4) {
    throw Error("Validator::update: " + std::to_string(nl) + " labels but bboxes of shape " +
                c10::str(gt_bboxes.sizes()) + "; pass normalized xywh boxes [m, 4]");
  }
  ++seen_;
  const bool original = rules_ == UltralyticsRules::V83;  // 8.4 matches in the network input
  at::Tensor bbox;  // the labels in the matching space's pixels
  if (nl) {
    bbox = loss::xywh2xyxy(gt_bboxes.reshape({-1, 4}).to(at::kFloat).cpu()) *
           at::tensor({imgsz[1], imgsz[0], imgsz[1], imgsz[0]}, at::kLong);
    if (original) scale_boxes(imgsz, bbox, info.ori_shape, info.ratio_pad);
  }
  at::Tensor predn = npr ? pred.slice(1, 0, 6).to(at::kFloat).clone() : at::zeros({0, 6});
  at::Tensor pbox = predn.slice(1, 0, 4);
  if (original && npr) scale_boxes(imgsz, pbox, info.ori_shape, info.ratio_pad);
  at::Tensor tp = at::zeros({npr, iouv_.numel()}, at::kBool);
  if (nl && npr) tp = match_predictions(predn.select(1, 5), cls, box_iou(bbox, pbox), iouv_);
  if (confusion_ && (nl || npr))
    confusion_->process_batch(npr ? predn : at::Tensor(), nl ? bbox : at::zeros({0, 4}), cls);
  if (masks && (nl || npr)) {
    at::Tensor tp_m = at::zeros({npr, iouv_.numel()}, at::kBool);
    if (nl && npr) tp_m = match_predictions(predn.select(1, 5), cls, second(bbox, predn), iouv_);
    tp_masks_.push_back(tp_m);
  }
  record(tp, predn, cls);
}

void Validator::update_rotated(const at::Tensor& pred_in, const at::Tensor& gt_cls, const at::Tensor& gt_rboxes,
                               std::array<int64_t, 2> imgsz, const ImageInfo& info) {
  const at::Tensor pred = pred_in.defined() ? pred_in.cpu().to(at::kFloat) : at::zeros({0, 7});
  if (pred.dim() != 2 || pred.size(1) != 7) {
    throw Error("Validator::update_rotated: predictions must be [n, 7] (x, y, w, h, conf, cls, angle), got " +
                c10::str(pred.sizes()));
  }
  const at::Tensor cls = gt_cls.reshape({-1}).to(at::kFloat).cpu();
  const int64_t nl = cls.size(0);
  if (gt_rboxes.numel() != nl * 5) {
    throw Error("Validator::update_rotated: " + std::to_string(nl) + " labels but boxes of shape " +
                c10::str(gt_rboxes.sizes()) + "; pass normalized xywhr boxes [m, 5]");
  }
  ++seen_;
  const bool original = rules_ == UltralyticsRules::V83;
  at::Tensor gt = gt_rboxes.reshape({-1, 5}).to(at::kFloat).cpu().clone();  // OBBValidator._prepare_batch
  gt.slice(1, 0, 4).mul_(at::tensor({imgsz[1], imgsz[0], imgsz[1], imgsz[0]}, at::kFloat));
  at::Tensor predn = pred.clone();
  if (original) {  // 8.3: both to the original image (scale_boxes with xywh=True)
    at::Tensor g = gt.slice(1, 0, 4), p = predn.slice(1, 0, 4);
    scale_boxes(imgsz, g, info.ori_shape, info.ratio_pad, true, true);
    scale_boxes(imgsz, p, info.ori_shape, info.ratio_pad, true, true);
  }
  const at::Tensor rboxes = at::cat({predn.slice(1, 0, 4), predn.slice(1, 6, 7)}, 1);
  at::Tensor tp = at::zeros({pred.size(0), iouv_.numel()}, at::kBool);
  if (nl && pred.size(0)) tp = match_predictions(predn.select(1, 5), cls, batch_probiou(gt, rboxes), iouv_);
  if (confusion_) confusion_->process_batch(pred.size(0) ? predn : at::Tensor(), nl ? gt : at::zeros({0, 5}), cls);
  record(tp, predn, cls);
}

void Validator::record(const at::Tensor& tp, const at::Tensor& predn, const at::Tensor& cls) {
  if (predn.size(0) == 0 && cls.size(0) == 0) return;  // Ultralytics keeps no stats of an empty image
  tp_.push_back(tp);
  conf_.push_back(predn.select(1, 4).clone());
  pred_cls_.push_back(predn.select(1, 5).clone());
  target_cls_.push_back(cls);
}

void Validator::update(const std::vector<at::Tensor>& preds, const at::Tensor& batch_idx,
                       const at::Tensor& cls, const at::Tensor& bboxes,
                       std::array<int64_t, 2> imgsz, const std::vector<ImageInfo>& infos) {
  if (preds.size() != infos.size()) {
    throw Error("Validator::update: " + std::to_string(preds.size()) + " prediction tensors but " +
                std::to_string(infos.size()) + " image infos; pass one of each per image");
  }
  const at::Tensor idx = batch_idx.reshape({-1}).cpu();
  const at::Tensor c = cls.reshape({-1}).cpu();
  const at::Tensor b = bboxes.reshape({-1, 4}).cpu();
  if (c.size(0) != idx.size(0) || b.size(0) != idx.size(0)) {
    throw Error("Validator::update: batch_idx " + c10::str(batch_idx.sizes()) + ", cls " +
                c10::str(cls.sizes()) + " and bboxes " + c10::str(bboxes.sizes()) + " disagree");
  }
  for (size_t si = 0; si < preds.size(); ++si) {
    const at::Tensor mask = idx == static_cast<int64_t>(si);
    update(preds[si], c.index({mask}), b.index({mask}), imgsz, infos[si]);
  }
}

DetMetrics Validator::finalize() const {
  return det_metrics(tp(), conf(), pred_cls(), target_cls(), rules_);
}

DetMetrics Validator::finalize_masks() const {
  if (tp_masks_.size() != tp_.size())
    throw Error("Validator::finalize_masks: the images were not given with masks or keypoints");
  return det_metrics(tp_masks(), conf(), pred_cls(), target_cls(), rules_);
}

at::Tensor Validator::tp_masks() const { return cat_or_empty(tp_masks_, {0, iouv_.numel()}, at::kBool); }

void Validator::reset() {
  seen_ = 0;
  if (confusion_) confusion_.emplace(nc_);
  tp_.clear();
  tp_masks_.clear();
  conf_.clear();
  pred_cls_.clear();
  target_cls_.clear();
}

std::vector<int64_t> Validator::nt_per_class() const {
  const at::Tensor t = target_cls().to(at::kLong);
  const int64_t n = std::max<int64_t>(nc_, t.numel() ? t.max().item<int64_t>() + 1 : 0);
  std::vector<int64_t> out(static_cast<size_t>(n), 0);
  const int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (p[i] >= 0) ++out[static_cast<size_t>(p[i])];
  }
  return out;
}

std::vector<int64_t> Validator::nt_per_image() const {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(nc_, 0)), 0);
  for (const at::Tensor& image_cls : target_cls_) {  // one entry per image with labels
    if (image_cls.numel() == 0) continue;
    const at::Tensor u = std::get<0>(at::_unique(image_cls.to(at::kLong)));
    const int64_t* p = u.data_ptr<int64_t>();
    for (int64_t i = 0; i < u.numel(); ++i) {
      if (p[i] < 0) continue;
      if (static_cast<size_t>(p[i]) >= out.size()) out.resize(static_cast<size_t>(p[i]) + 1, 0);
      ++out[static_cast<size_t>(p[i])];
    }
  }
  return out;
}

at::Tensor Validator::tp() const { return cat_or_empty(tp_, {0, iouv_.numel()}, at::kBool); }
at::Tensor Validator::conf() const { return cat_or_empty(conf_, {0}, at::kFloat); }
at::Tensor Validator::pred_cls() const { return cat_or_empty(pred_cls_, {0}, at::kFloat); }
at::Tensor Validator::target_cls() const {
  return cat_or_empty(target_cls_, {0}, at::kFloat).contiguous();
}

}  // namespace yolotrain::metrics
