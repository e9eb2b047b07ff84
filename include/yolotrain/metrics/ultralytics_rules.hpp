#pragma once

namespace yolotrain::metrics {

/// Whose validation rules the metrics follow (compat= in yolo_train):
/// - V83, Ultralytics 8.0 to 8.3: predictions and labels are matched in the original image (both
///   scaled back by scale_boxes, which clips the predictions to the image); compute_ap's recall
///   sentinels are (0, 1) and (1, 0).
/// - V84, Ultralytics 8.4: matched in the network input (letterboxed pixels, nothing clipped);
///   compute_ap adds a point at the curve's last recall with precision 0 before (1, 0), so the
///   precision envelope ends there instead of sloping down to recall 1.
enum class UltralyticsRules { V83, V84 };

}  // namespace yolotrain::metrics
