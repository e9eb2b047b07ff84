#include "loss_inputs.hpp"

#include "yolotrain/error.hpp"

namespace yolotrain::loss::detail {

std::string shape_text(const at::Tensor& t) { return t.defined() ? c10::str(t.sizes()) : std::string("(undefined)"); }

void check_level_outputs(const std::vector<at::Tensor>& feats, const DetectionLossOptions& o, const std::string& who) {
  const int64_t no = o.nc + 4 * o.reg_max;
  if (feats.size() != o.strides.size()) {
    throw Error(who + ": got " + std::to_string(feats.size()) + " output levels but " +
                std::to_string(o.strides.size()) + " strides; pass the model's raw per-level outputs");
  }
  for (size_t i = 0; i < feats.size(); ++i) {
    const at::Tensor& f = feats[i];
    if (!f.defined() || f.dim() != 4 || f.size(1) != no || f.size(0) != feats[0].size(0) || f.size(0) < 1 ||
        f.size(2) < 1 || f.size(3) < 1) {
      throw Error(who + ": output level " + std::to_string(i) + " has shape " + shape_text(f) + "; expected [B, " +
                  std::to_string(no) + " (4*reg_max + nc), H, W]");
    }
  }
}

at::Tensor target_rows(const Targets& t, int64_t batch_size, int64_t nc, const at::TensorOptions& options,
                       int64_t box_width, const std::string& boxes, const std::string& who) {
  const std::string width = std::to_string(box_width);
  if (!t.batch_idx.defined() || !t.cls.defined() || !t.bboxes.defined()) {
    throw Error(who + ": targets.batch_idx, targets.cls and targets.bboxes must all be set (use empty tensors [0], "
                "[0, 1], [0, " + width + "] for a batch without boxes)");
  }
  const int64_t n = t.batch_idx.numel();
  if (t.cls.numel() != n || t.bboxes.dim() != 2 || t.bboxes.size(0) != n || t.bboxes.size(1) != box_width) {
    throw Error(who + ": targets disagree: batch_idx " + shape_text(t.batch_idx) + ", cls " + shape_text(t.cls) +
                ", bboxes " + shape_text(t.bboxes) + "; expected [N], [N, 1] and [N, " + width + "] (" + boxes + ")");
  }
  if (n > 0) {
    const at::Tensor idx = t.batch_idx.to(at::kDouble);
    const at::Tensor cls = t.cls.to(at::kDouble);
    if (idx.min().item<double>() < 0 || idx.max().item<double>() >= batch_size) {
      throw Error(who + ": targets.batch_idx holds values outside [0, " + std::to_string(batch_size) +
                  ") for a batch of " + std::to_string(batch_size) + " images; fix the image indices of the targets");
    }
    if (cls.min().item<double>() < 0 || cls.max().item<double>() >= nc) {
      throw Error(who + ": targets.cls holds values outside [0, " + std::to_string(nc) +
                  "); check the labels against the model's number of classes");
    }
  }
  return at::cat({t.batch_idx.reshape({-1, 1}).to(options), t.cls.reshape({-1, 1}).to(options),
                  t.bboxes.to(options)},
                 1);
}

at::Tensor pack_per_image(const at::Tensor& rows, const at::Tensor& image, int64_t batch_size) {
  const at::Tensor counts = at::zeros({batch_size}, image.options()).scatter_add_(0, image, at::ones_like(image));
  const at::Tensor offsets = at::cat({at::zeros({1}, image.options()), counts.cumsum(0)});
  const at::Tensor within = at::arange(image.size(0), image.options()) - offsets.index({image});
  std::vector<int64_t> shape = {batch_size, counts.max().item<int64_t>()};
  for (int64_t d = 1; d < rows.dim(); ++d) shape.push_back(rows.size(d));
  at::Tensor out = at::zeros(shape, rows.options());
  out.index_put_({image, within}, rows);
  return out;
}

}  // namespace yolotrain::loss::detail
