// Ultralytics 8.4.117 utils/loss.py v8PoseLoss, PoseLoss26 (kpts_decode, _select_target_keypoints,
// calculate_keypoints_loss, calculate_rle_loss), KeypointLoss, RLELoss, and E2ELoss with them;
// utils/metrics.py OKS_SIGMA and RLE_WEIGHT.
#include "yolotrain/loss/pose_loss.hpp"

#include <string>

#include "loss_inputs.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/nn/anchors.hpp"

namespace yolotrain::loss {
namespace {

using detail::pack_per_image;
using detail::shape_text;

bool coco_shape(const std::vector<int64_t>& kpt_shape) { return kpt_shape == std::vector<int64_t>{17, 3}; }

// RLE_WEIGHT: the wrists and ankles count most, the elbows and knees next.
const std::vector<double>& coco_rle_weights() {
  static const std::vector<double> w = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.2, 1.2,
                                        1.5, 1.5, 1.0, 1.0, 1.2, 1.2, 1.5, 1.5};
  return w;
}

// KeypointLoss.forward: the OKS-shaped distance term over the visible keypoints.
at::Tensor keypoint_location_loss(const at::Tensor& pred, const at::Tensor& gt_xy, const at::Tensor& visible,
                                  const at::Tensor& area, const at::Tensor& sigmas) {
  const at::Tensor dx = pred.select(-1, 0) - gt_xy.select(-1, 0), dy = pred.select(-1, 1) - gt_xy.select(-1, 1);
  const at::Tensor d = dx.pow(2) + dy.pow(2);
  const at::Tensor factor = static_cast<double>(visible.size(1)) / (visible.sum(1) + 1e-9);
  const at::Tensor e = d / ((2 * sigmas).pow(2) * (area + 1e-9) * 2);
  return (factor.view({-1, 1}) * ((1 - at::exp(-e)) * visible)).mean();
}

// _select_target_keypoints: each anchor's assigned GT's keypoints, [B, A, n, dims].
at::Tensor select_target_keypoints(const at::Tensor& keypoints, const at::Tensor& batch_idx,
                                   const at::Tensor& target_gt_idx, int64_t batch_size) {
  const at::Tensor batched = pack_per_image(keypoints, batch_idx.reshape({-1}).to(at::kLong), batch_size);
  const at::Tensor index = target_gt_idx.unsqueeze(-1).unsqueeze(-1).expand(
      {-1, -1, keypoints.size(1), keypoints.size(2)});
  return batched.gather(1, index);
}

}  // namespace

std::vector<double> oks_sigmas(const std::vector<int64_t>& kpt_shape, const std::vector<double>& given) {
  const int64_t n = kpt_shape.empty() ? 0 : kpt_shape[0];
  if (!given.empty()) {
    bool positive = static_cast<int64_t>(given.size()) == n;
    for (double s : given) positive = positive && s > 0;
    if (!positive) {
      std::string text;
      for (double s : given) text += (text.empty() ? "" : ", ") + std::to_string(s);
      throw Error("'kpt_oks_sigmas' must be " + std::to_string(n) + " positive values, got [" + text + "]");
    }
    return given;
  }
  if (!coco_shape(kpt_shape)) return std::vector<double>(static_cast<size_t>(n), 1.0 / static_cast<double>(n));
  const float v[] = {.26f, .25f, .25f, .35f, .35f, .79f, .79f, .72f, .72f,
                     .62f, .62f, 1.07f, 1.07f, .87f, .87f, .89f, .89f};
  std::vector<double> out;
  for (float x : v) out.push_back(static_cast<double>(x / 10.0f));  // float32, as numpy's OKS_SIGMA / 10.0
  return out;
}

PoseLossOptions PoseLossOptions::of(const std::vector<int64_t>& kpt_shape, bool pose26, std::vector<double> sigmas) {
  PoseLossOptions o;
  o.kpt_shape = kpt_shape;
  o.pose26 = pose26;
  o.sigmas = std::move(sigmas);
  return o;
}

PoseLoss::PoseLoss(DetectionLossOptions options, LossGains gains, PoseLossOptions pose, PoseGains pose_gains,
                   nn::RealNVP flow)
    : detection_(std::move(options), gains), pose_(std::move(pose)), pose_gains_(pose_gains),
      flow_(pose_.pose26 ? std::move(flow) : nullptr) {
  const auto& ks = pose_.kpt_shape;
  if (ks.size() != 2 || ks[0] < 1 || (ks[1] != 2 && ks[1] != 3))
    throw Error("PoseLoss: kpt_shape must be [keypoints, 2 or 3]");
  const auto n = static_cast<size_t>(ks[0]);
  const std::vector<double> sigmas = oks_sigmas(ks, pose_.sigmas);
  sigmas_ = at::tensor(std::vector<float>(sigmas.begin(), sigmas.end()));
  const std::vector<double> rle = coco_shape(ks) ? coco_rle_weights() : std::vector<double>(n, 1.0);
  rle_weights_ = at::tensor(rle, at::kDouble);  // float64, as torch.from_numpy(RLE_WEIGHT)
}

LossOutput PoseLoss::operator()(const PoseOutputs& out, const Targets& targets, const at::Tensor& keypoints) const {
  const int64_t b = out.feats.empty() ? 0 : out.feats[0].size(0), nk = pose_.kpt_shape[0] * pose_.kpt_shape[1];
  if (!out.keypoints.defined() || out.keypoints.dim() != 3 || out.keypoints.size(0) != b ||
      out.keypoints.size(1) != nk) {
    throw Error("PoseLoss: keypoints " + shape_text(out.keypoints) + "; expected [B, " + std::to_string(nk) +
                ", A] (a Pose head's HeadOutputs::keypoints)");
  }
  const int64_t boxes = targets.bboxes.size(0);
  if (!keypoints.defined() || keypoints.dim() != 3 || keypoints.size(0) != boxes ||
      keypoints.size(1) != pose_.kpt_shape[0] || keypoints.size(2) != pose_.kpt_shape[1]) {
    throw Error("PoseLoss: the batch's keypoints " + shape_text(keypoints) + "; expected [" + std::to_string(boxes) +
                ", " + std::to_string(pose_.kpt_shape[0]) + ", " + std::to_string(pose_.kpt_shape[1]) +
                "], one row per box (data::Batch::keypoints)");
  }
  const DetectionTerms det = detection_.terms(out.feats, targets);
  const Terms t = keypoint_terms(det, out, targets, keypoints);
  std::vector<at::Tensor> items = {det.loss[0], t.location * pose_gains_.pose, t.objectness * pose_gains_.kobj,
                                   det.loss[1], det.loss[2]};
  if (flow_) items.push_back(t.rle * pose_gains_.rle);
  const at::Tensor all = at::stack(items);
  return {all.sum() * b, all.detach()};
}

PoseLoss::Terms PoseLoss::keypoint_terms(const DetectionTerms& det, const PoseOutputs& out, const Targets& targets,
                                         const at::Tensor& keypoints) const {
  const at::Tensor zero = at::zeros({}, det.loss.options());
  Terms t{zero, zero, zero};
  const Assignment& a = det.assignment;
  if (!a.fg_mask.defined() || !a.fg_mask.any().item<bool>()) return t;  // Ultralytics: the terms stay 0
  const int64_t b = out.feats[0].size(0), n = pose_.kpt_shape[0], dims = pose_.kpt_shape[1];
  auto [anchors, strides] = nn::make_anchors(out.feats, detection_.options().strides, 0.5);
  at::Tensor pred = out.keypoints.permute({0, 2, 1}).contiguous().view({b, -1, n, dims});
  if (flow_ && out.sigma.defined())
    pred = at::cat({pred, out.sigma.permute({0, 2, 1}).contiguous().view({b, -1, n, 2})}, -1);
  const at::Tensor anchor = anchors.view({1, -1, 1, 2});
  const at::Tensor xy = pose_.pose26 ? pred.slice(-1, 0, 2) + anchor : pred.slice(-1, 0, 2) * 2.0 + (anchor - 0.5);
  pred = at::cat({xy, pred.slice(-1, 2)}, -1);  // kpts_decode, in grid units

  at::Tensor gt = keypoints.to(pred.device()).to(at::kFloat).clone();
  gt.select(-1, 0).mul_(det.imgsz[1]);
  gt.select(-1, 1).mul_(det.imgsz[0]);
  gt = select_target_keypoints(gt, targets.batch_idx.to(pred.device()), a.target_gt_idx, b).index({a.fg_mask});
  const at::Tensor stride = strides.view({1, -1}).expand({b, -1}).index({a.fg_mask}).view({-1, 1, 1});
  const at::Tensor gt_xy = gt.slice(-1, 0, 2) / stride;
  const at::Tensor boxes = (a.target_bboxes / strides).index({a.fg_mask});  // grid units
  const at::Tensor area = ((boxes.select(1, 2) - boxes.select(1, 0)) * (boxes.select(1, 3) - boxes.select(1, 1)))
                              .view({-1, 1});
  const at::Tensor mine = pred.index({a.fg_mask});
  const at::Tensor visible = dims == 3 ? gt.select(-1, 2) != 0 : at::ones_like(gt.select(-1, 0), at::kBool);
  t.location = keypoint_location_loss(mine, gt_xy, visible, area, sigmas_.to(pred.device()));
  if (flow_ && mine.size(-1) >= 4) t.rle = rle_term(mine, gt_xy, visible).clamp_min(0);
  if (mine.size(-1) == 3 || mine.size(-1) == 5)
    t.objectness = at::binary_cross_entropy_with_logits(mine.select(-1, 2), visible.to(at::kFloat));
  return t;
}

at::Tensor PoseLoss::rle_term(const at::Tensor& pred, const at::Tensor& gt_xy, const at::Tensor& visible) const {
  const at::Tensor none = pred.slice(-1, 0, 0).sum();  // 0, with the graph
  if (!visible.any().item<bool>()) return none;
  const at::Tensor seen = pred.index({visible});
  const at::Tensor coords = seen.slice(-1, 0, 2), target = gt_xy.index({visible});
  at::Tensor sigma = seen.slice(-1, seen.size(-1) - 2).sigmoid();
  at::Tensor weights = rle_weights_.to(pred.device()).unsqueeze(0).repeat({visible.size(0), 1}).index({visible});
  at::Tensor error = (coords - target) / (sigma + 1e-9);
  const at::Tensor valid = (at::isnan(error) | at::isinf(error)).any(-1).logical_not();
  if (!valid.any().item<bool>()) return none;
  error = error.index({valid}).clamp(-100, 100);
  sigma = sigma.index({valid});
  weights = weights.index({valid});
  const at::Tensor log_phi = flow_->log_prob(error);
  at::Tensor loss = at::log(sigma) - log_phi.unsqueeze(1);  // RLELoss(use_target_weight, size_average, residual)
  loss = loss + (at::log(sigma * 2) + error.abs());
  loss = (loss * weights.unsqueeze(1)).to(loss.scalar_type());
  return (loss / static_cast<double>(loss.size(0))).sum();
}

E2EPoseLoss::E2EPoseLoss(DetectionLossOptions options, LossGains gains, PoseLossOptions pose, PoseGains pose_gains,
                         nn::RealNVP flow, std::int64_t epochs)
    : one2many_(options.with_topk(10, 0), gains, pose, pose_gains, flow),
      one2one_(options.with_topk(7, 1), gains, pose, pose_gains, flow),
      epochs_(epochs),
      weights_(E2EWeights::at_epoch(0, epochs)) {
  if (epochs < 1) throw Error("E2EPoseLoss: epochs must be at least 1, got " + std::to_string(epochs));
}

LossOutput E2EPoseLoss::operator()(const PoseOutputs& one2many, const PoseOutputs& one2one, const Targets& targets,
                                   const at::Tensor& keypoints) const {
  const LossOutput m = one2many_(one2many, targets, keypoints);
  const LossOutput o = one2one_(one2one, targets, keypoints);
  return {m.total * weights_.o2m + o.total * weights_.o2o, o.items};
}

}  // namespace yolotrain::loss
