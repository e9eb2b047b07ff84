#pragma once
// What the losses check of their inputs, and the batch's rows packed per image: shared by DetectionLoss,
// OBBLoss and PoseLoss (src/loss/loss_inputs.cpp).
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "yolotrain/loss/detection_loss.hpp"

namespace yolotrain::loss::detail {

/// `o.class_weights` as the BCE's weight over [B, A, C] scores like `scores` ([1, 1, C], their
/// dtype and device); undefined when there are none.
at::Tensor class_weights(const DetectionLossOptions& o, const at::Tensor& scores);

/// A tensor's sizes for a message, "(undefined)" for none.
std::string shape_text(const at::Tensor& t);

/// Throws yolotrain::Error, its message starting with `who`, unless `feats` are one raw output per
/// stride of `o`, each [B, 4*reg_max + nc, H, W] with B, H, W >= 1 and one B.
void check_level_outputs(const std::vector<at::Tensor>& feats, const DetectionLossOptions& o, const std::string& who);

/// Checks the batch fields (`box_width` numbers per box, described by `boxes` in a message; image
/// indices within the batch, classes within nc) and returns them as one [N, 2 + box_width] tensor
/// (image, class, box) of `options`. Errors start with `who`.
at::Tensor target_rows(const Targets& t, int64_t batch_size, int64_t nc, const at::TensorOptions& options,
                       int64_t box_width, const std::string& boxes, const std::string& who);

/// `rows` [N, ...] of a batch's boxes, box k in image `image[k]` (int64 [N]), packed per image in their
/// order: [B, M, ...] with M the largest count, zeros after each image's rows.
at::Tensor pack_per_image(const at::Tensor& rows, const at::Tensor& image, int64_t batch_size);

}  // namespace yolotrain::loss::detail
