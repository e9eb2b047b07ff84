#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/loss/e2e_loss.hpp"
#include "yolotrain/nn/realnvp.hpp"

namespace yolotrain::loss {

/// A pose head's outputs for one branch (nn::HeadOutputs' fields).
struct PoseOutputs {
  std::vector<at::Tensor> feats;  ///< raw per level [B, 4*reg_max + nc, H_i, W_i]
  at::Tensor keypoints;           ///< [B, n * dims, A], raw
  at::Tensor sigma;               ///< [B, 2n, A] (Pose26 in training), else undefined
};

/// The gains of the pose terms (Ultralytics' hyperparameters pose, kobj, rle; 8.4's defaults).
struct PoseGains {
  double pose = 12.0;
  double kobj = 1.0;
  double rle = 1.0;
};

/// What the pose terms need besides the detection loss's options.
struct PoseLossOptions {
  std::vector<int64_t> kpt_shape = {17, 3};  ///< keypoints, dims (2 or 3)
  /// OKS sigmas, one per keypoint (Ultralytics' kpt_oks_sigmas from the data YAML); empty: COCO's
  /// OKS_SIGMA for kpt_shape [17, 3], else 1 / n each (v8PoseLoss).
  std::vector<double> sigmas;
  /// Pose26: decode keypoints as (raw + anchor) instead of (raw * 2 + anchor - 0.5), and with a
  /// flow (PoseLoss::flow) add the RLE term.
  bool pose26 = false;
  /// The kpt_shape a Pose head of `model` has, its Pose26-ness, and the given sigmas.
  static PoseLossOptions of(const std::vector<int64_t>& kpt_shape, bool pose26, std::vector<double> sigmas = {});
};

/// Ultralytics 8.4.117's v8PoseLoss and PoseLoss26 (utils/loss.py): the detection terms
/// (DetectionLoss; box, cls, dfl or l1) plus, over the positive anchors in grid units of their
/// level, the keypoint location term (KeypointLoss: 1 - exp(-d / ((2 sigma)^2 * 2 (area + 1e-9)))
/// over the visible keypoints, each box weighted by n / visible count, mean; times gains.pose), the
/// keypoint objectness (BCE with logits of the visibility against visible, for 3-dim keypoints;
/// times gains.kobj) and, for Pose26 with a flow, the RLE term (the residual over sigmoid(sigma)
/// through RealNVP's log_prob, RLELoss with 8.4's RLE_WEIGHT for [17, 3] else 1, averaged over the
/// visible keypoints, clamped at 0 as 8.4 does since PR #23604; times gains.rle). Without a
/// positive anchor the pose terms are 0.
/// One deviation: Ultralytics' PoseLoss26 raises IndexError for 2-dim keypoints (it indexes with a
/// float mask); here every 2-dim keypoint counts as visible there too, as in v8PoseLoss.
class PoseLoss {
 public:
  /// `flow`: the head's flow_model for Pose26's RLE term; null for none.
  PoseLoss(DetectionLossOptions options, LossGains gains, PoseLossOptions pose, PoseGains pose_gains = {},
           nn::RealNVP flow = nullptr);

  /// keypoints: the batch's [N, n, dims] normalized x y (visibility), in targets' box order (data::
  /// Batch::keypoints). total = items.sum() * B with gradient; items: box, pose, kobj, cls, dfl (or
  /// l1)[, rle] (Ultralytics' loss_names order). Throws yolotrain::Error naming a shape that disagrees.
  LossOutput operator()(const PoseOutputs& outputs, const Targets& targets, const at::Tensor& keypoints) const;

  const DetectionLoss& detection() const { return detection_; }
  /// The number of items: 6 with the RLE term, else 5.
  int64_t items() const { return flow_ ? 6 : 5; }

 private:
  struct Terms {
    at::Tensor location, objectness, rle;
  };
  Terms keypoint_terms(const DetectionTerms& det, const PoseOutputs& out, const Targets& targets,
                       const at::Tensor& keypoints) const;
  at::Tensor rle_term(const at::Tensor& pred, const at::Tensor& gt, const at::Tensor& visible) const;

  DetectionLoss detection_;
  PoseLossOptions pose_;
  PoseGains pose_gains_;
  nn::RealNVP flow_;
  at::Tensor sigmas_;       ///< [n]
  at::Tensor rle_weights_;  ///< [n]
};

/// Ultralytics 8.4's E2ELoss(model, PoseLoss26) for YOLO26-pose: the pose loss of the one-to-many
/// branch (topk 10) and of the one-to-one branch (topk 7, topk2 1), weighted by E2EWeights at the
/// epoch; items are the one-to-one's. Both branches read the head's one flow.
class E2EPoseLoss {
 public:
  E2EPoseLoss(DetectionLossOptions options, LossGains gains, PoseLossOptions pose, PoseGains pose_gains,
              nn::RealNVP flow, std::int64_t epochs);
  void set_epoch(std::int64_t epoch) { weights_ = E2EWeights::at_epoch(epoch, epochs_); }
  const E2EWeights& weights() const { return weights_; }
  LossOutput operator()(const PoseOutputs& one2many, const PoseOutputs& one2one, const Targets& targets,
                        const at::Tensor& keypoints) const;
  const PoseLoss& one2many() const { return one2many_; }
  const PoseLoss& one2one() const { return one2one_; }

 private:
  PoseLoss one2many_;
  PoseLoss one2one_;
  std::int64_t epochs_;
  E2EWeights weights_;
};

/// The OKS sigmas of a kpt_shape as Ultralytics' pose loss and validator take them: `given` (the
/// data YAML's kpt_oks_sigmas) when not empty, else COCO's OKS_SIGMA ([.26, .25, .25, .35, .35,
/// .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89] / 10) for [17, 3], else 1 / n
/// each. Throws yolotrain::Error unless `given` holds n positive values.
std::vector<double> oks_sigmas(const std::vector<int64_t>& kpt_shape, const std::vector<double>& given = {});

}  // namespace yolotrain::loss
