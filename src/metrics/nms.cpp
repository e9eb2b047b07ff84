#include "yolotrain/metrics/nms.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "yolotrain/error.hpp"
#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/metrics/obb.hpp"

namespace yolotrain::metrics {

namespace {

using at::indexing::Slice;

// Greedy suppression (torchvision's CPU loop) over boxes `order[0..n)`, highest score first.
template <typename scalar_t>
void greedy(const scalar_t* x1, const scalar_t* y1, const scalar_t* x2, const scalar_t* y2,
            const scalar_t* areas, const std::vector<int64_t>& order, double iou_threshold,
            std::vector<char>& suppressed) {
  const auto n = static_cast<int64_t>(order.size());
  for (int64_t oi = 0; oi < n; ++oi) {
    const int64_t i = order[oi];
    if (suppressed[i]) continue;
    const scalar_t ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], iarea = areas[i];
    for (int64_t oj = oi + 1; oj < n; ++oj) {
      const int64_t j = order[oj];
      if (suppressed[j]) continue;
      const scalar_t w = std::max(static_cast<scalar_t>(0), std::min(ix2, x2[j]) - std::max(ix1, x1[j]));
      const scalar_t h = std::max(static_cast<scalar_t>(0), std::min(iy2, y2[j]) - std::max(iy1, y1[j]));
      const scalar_t inter = w * h;
      const scalar_t ovr = inter / (iarea + areas[j] - inter);
      if (ovr > iou_threshold) suppressed[j] = 1;
    }
  }
}

// Splits `order` by group when the groups' bounding rectangles are pairwise disjoint (then no
// box can suppress a box of another group, and suppressing within each group is exactly the
// global result). Returns nothing when they are not, or for a negative threshold.
template <typename scalar_t>
std::optional<std::vector<std::vector<int64_t>>> split_groups(
    const scalar_t* x1, const scalar_t* y1, const scalar_t* x2, const scalar_t* y2,
    const std::vector<int64_t>& order, const std::vector<int64_t>& group, int64_t n_groups,
    double iou_threshold) {
  if (n_groups < 2 || iou_threshold < 0) return std::nullopt;
  struct Rect {
    scalar_t x1, y1, x2, y2;
    bool empty = true;
  };
  std::vector<Rect> r(static_cast<size_t>(n_groups));
  std::vector<std::vector<int64_t>> parts(static_cast<size_t>(n_groups));
  for (int64_t i : order) {
    if (std::isnan(x1[i]) || std::isnan(y1[i]) || std::isnan(x2[i]) || std::isnan(y2[i])) return std::nullopt;
    Rect& g = r[static_cast<size_t>(group[i])];
    if (g.empty) {
      g = {x1[i], y1[i], x2[i], y2[i], false};
    } else {
      g.x1 = std::min(g.x1, x1[i]);
      g.y1 = std::min(g.y1, y1[i]);
      g.x2 = std::max(g.x2, x2[i]);
      g.y2 = std::max(g.y2, y2[i]);
    }
    parts[static_cast<size_t>(group[i])].push_back(i);
  }
  for (size_t a = 0; a < r.size(); ++a) {
    for (size_t b = a + 1; b < r.size(); ++b) {
      if (std::min(r[a].x2, r[b].x2) - std::max(r[a].x1, r[b].x1) > 0 &&
          std::min(r[a].y2, r[b].y2) - std::max(r[a].y1, r[b].y1) > 0) {
        return std::nullopt;
      }
    }
  }
  return parts;
}

template <typename scalar_t>
at::Tensor nms_impl(const at::Tensor& dets, const at::Tensor& scores, double iou_threshold,
                    const std::vector<int64_t>* group, int64_t n_groups) {
  const int64_t n = dets.size(0);
  const at::Tensor x1_t = dets.select(1, 0).contiguous(), y1_t = dets.select(1, 1).contiguous();
  const at::Tensor x2_t = dets.select(1, 2).contiguous(), y2_t = dets.select(1, 3).contiguous();
  const at::Tensor areas_t = (x2_t - x1_t) * (y2_t - y1_t);
  const at::Tensor order_t = std::get<1>(scores.sort(/*stable=*/true, 0, /*descending=*/true));
  const scalar_t* x1 = x1_t.data_ptr<scalar_t>();
  const scalar_t* y1 = y1_t.data_ptr<scalar_t>();
  const scalar_t* x2 = x2_t.data_ptr<scalar_t>();
  const scalar_t* y2 = y2_t.data_ptr<scalar_t>();
  const scalar_t* areas = areas_t.data_ptr<scalar_t>();
  const std::vector<int64_t> order(order_t.data_ptr<int64_t>(), order_t.data_ptr<int64_t>() + n);
  std::vector<char> suppressed(static_cast<size_t>(n), 0);
  std::optional<std::vector<std::vector<int64_t>>> parts;
  if (group) parts = split_groups(x1, y1, x2, y2, order, *group, n_groups, iou_threshold);
  if (parts) {
    for (const auto& part : *parts) greedy(x1, y1, x2, y2, areas, part, iou_threshold, suppressed);
  } else {
    greedy(x1, y1, x2, y2, areas, order, iou_threshold, suppressed);
  }
  std::vector<int64_t> keep;
  for (int64_t i : order) {
    if (!suppressed[i]) keep.push_back(i);
  }
  return at::tensor(keep, at::kLong);
}

at::Tensor run_nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold,
                   const std::vector<int64_t>* group, int64_t n_groups) {
  if (boxes.size(0) == 0) return at::empty({0}, at::kLong);
  const at::Tensor b = boxes.cpu(), s = scores.cpu().to(boxes.scalar_type());
  at::Tensor keep;
  AT_DISPATCH_FLOATING_TYPES(b.scalar_type(), "nms", [&] {
    keep = nms_impl<scalar_t>(b, s, iou_threshold, group, n_groups);
  });
  return keep.to(boxes.device());
}

// Dense group ids (0..k) of the class column, for run_nms.
std::vector<int64_t> class_groups(const at::Tensor& cls, int64_t* n_groups) {
  const auto uniq = at::_unique2(cls.cpu().contiguous(), true, true, false);
  const at::Tensor inverse = std::get<1>(uniq).to(at::kLong).contiguous();
  *n_groups = std::get<0>(uniq).numel();
  return std::vector<int64_t>(inverse.data_ptr<int64_t>(), inverse.data_ptr<int64_t>() + inverse.numel());
}

// One image's candidates [n, 6 + extras] (x1, y1, x2, y2, conf, cls, extras) above the
// confidence threshold.
at::Tensor candidates(const at::Tensor& x, int64_t nc, const NmsOptions& o, bool multi_label) {
  const at::Tensor box = x.slice(1, 0, 4), cls = x.slice(1, 4, 4 + nc), extra = x.slice(1, 4 + nc);
  if (multi_label) {
    const auto ij = at::where(cls > o.conf);
    const at::Tensor& i = ij[0];
    const at::Tensor& j = ij[1];
    return at::cat({box.index({i}), x.index({i, j + 4}).unsqueeze(1), j.unsqueeze(1).to(x.scalar_type()),
                    extra.index({i})},
                   1);
  }
  const auto [conf, j] = cls.max(1, true);
  return at::cat({box, conf, j.to(x.scalar_type()), extra}, 1).index({conf.view(-1) > o.conf});
}

}  // namespace

at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  if (boxes.dim() != 2 || boxes.size(1) != 4 || scores.dim() != 1 ||
      scores.size(0) != boxes.size(0)) {
    throw Error("nms: expected boxes [n, 4] and scores [n], got " + c10::str(boxes.sizes()) +
                " and " + c10::str(scores.sizes()));
  }
  return run_nms(boxes, scores, iou_threshold, nullptr, 0);
}

std::vector<at::Tensor> select_end2end(const at::Tensor& pred, const NmsOptions& o) {
  if (pred.dim() != 3 || pred.size(2) < 6) {
    throw Error("non_max_suppression: expected an end-to-end head's detections [B, k, 6] (x1 y1 x2 y2, score, "
                "class, then any mask coefficients), got " + c10::str(pred.sizes()));
  }
  std::optional<at::Tensor> classes;
  if (o.classes) classes = at::tensor(*o.classes, at::kLong).to(pred.device()).to(pred.scalar_type());
  std::vector<at::Tensor> output;
  for (int64_t i = 0; i < pred.size(0); ++i) {
    at::Tensor mask = pred[i].select(1, 4) > o.conf;
    if (classes) mask &= (pred[i].slice(1, 5, 6) == *classes).any(1);
    output.push_back(pred[i].index({mask.nonzero().view(-1).slice(0, 0, o.max_det)}));
  }
  return output;
}

std::vector<at::Tensor> non_max_suppression(const at::Tensor& pred, const NmsOptions& o) {
  if (o.end2end) return select_end2end(pred, o);
  if (pred.dim() != 3 || pred.size(1) < 5) {
    throw Error("non_max_suppression: expected predictions [B, 4 + nc, A] (xywh, class scores), got " +
                c10::str(pred.sizes()));
  }
  if (o.max_det < 0 || o.max_nms < 1) {
    throw Error("non_max_suppression: max_det must be >= 0 and max_nms >= 1");
  }
  const int64_t bs = pred.size(0), nc = o.nc > 0 ? o.nc : pred.size(1) - 4;
  if (nc > pred.size(1) - 4) {
    throw Error("non_max_suppression: nc " + std::to_string(nc) + " but only " + std::to_string(pred.size(1) - 4) +
                " columns after the box");
  }
  const bool multi_label = o.multi_label && nc > 1;
  const at::Tensor xc = pred.slice(1, 4, 4 + nc).amax(1) > o.conf;  // candidates [B, A]
  const at::Tensor p = pred.transpose(-1, -2);
  const at::Tensor prediction = o.rotated ? p : at::cat({loss::xywh2xyxy(p.slice(2, 0, 4)), p.slice(2, 4)}, -1);
  std::optional<at::Tensor> classes;
  if (o.classes) classes = at::tensor(*o.classes, at::kLong).to(pred.device());

  std::vector<at::Tensor> output(static_cast<size_t>(bs), at::zeros({0, 6 + pred.size(1) - 4 - nc}, pred.options()));
  for (int64_t xi = 0; xi < bs; ++xi) {
    at::Tensor x = prediction[xi].index({xc[xi]});
    if (x.size(0) == 0) continue;
    x = candidates(x, nc, o, multi_label);
    if (classes) x = x.index({(x.slice(1, 5, 6) == *classes).any(1)});
    const int64_t n = x.size(0);
    if (n == 0) continue;
    if (n > o.max_nms) {
      const at::Tensor order = std::get<1>(x.select(1, 4).sort(/*stable=*/true, 0, true));
      x = x.index({order.slice(0, 0, o.max_nms)});
    }
    const at::Tensor c = x.slice(1, 5, 6) * (o.agnostic ? 0.0 : o.max_wh);
    if (o.rotated) {  // TorchNMS.fast_nms with batch_probiou on xywhr, the class offset on the centre
      const at::Tensor boxes = at::cat({x.slice(1, 0, 2) + c, x.slice(1, 2, 4), x.slice(1, -1)}, 1);
      output[static_cast<size_t>(xi)] = x.index({nms_rotated(boxes, x.select(1, 4), o.iou).slice(0, 0, o.max_det)});
      continue;
    }
    // The class offset separates classes; when the offset boxes of different classes cannot
    // touch, suppression runs per class (same result, far fewer pairs).
    int64_t n_groups = 0;
    const std::vector<int64_t> groups =
        o.agnostic ? std::vector<int64_t>() : class_groups(x.select(1, 5), &n_groups);
    const at::Tensor i = run_nms(x.slice(1, 0, 4) + c, x.select(1, 4), o.iou,
                                 o.agnostic ? nullptr : &groups, n_groups);
    output[static_cast<size_t>(xi)] = x.index({i.slice(0, 0, o.max_det)});
  }
  return output;
}

}  // namespace yolotrain::metrics
