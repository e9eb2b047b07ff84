// Pose rows [nc, kpt_shape] (YOLOv8-pose, YOLO11-pose) and Pose26 rows (YOLO26-pose): Detect plus
// keypoints (nn::DetectImpl with kpt_shape; Pose26 with its scales and RealNVP flow). The row's
// `kpt_shape` names the YAML's top-level kpt_shape, as Ultralytics' parse_model resolves it (a list
// written in the row is taken as is); DetectionModelOptions::kpt_shape, a dataset's, replaces the
// top-level one as Ultralytics' PoseModel(data_kpt_shape=...) does.
#include "../layer_row.hpp"
#include "yolotrain/nn/detect.hpp"

namespace yolotrain::nn::detail {
namespace {

std::vector<int64_t> row_kpt_shape(const LayerRow& row) {
  const YAML::Node& args = row.layer().args;
  const bool named = args.size() < 2 || (args[1].IsScalar() && args[1].Scalar() == "kpt_shape");
  if (named) {
    if (row.model().kpt_shape.empty()) {
      throw row.error("no kpt_shape: the YAML names none (kpt_shape: [17, 3]) and no dataset gave one");
    }
    return row.model().kpt_shape;
  }
  try {
    return args[1].as<std::vector<int64_t>>();
  } catch (const YAML::Exception&) {
    throw row.error("args[1] must be kpt_shape or a list [keypoints, 2 or 3]");
  }
}

DetectOptions pose_options(const LayerRow& row) { return detect_options(row).kpt_shape(row_kpt_shape(row)); }

LayerKind::Built build_pose(const LayerRow& row) { return {Detect(pose_options(row)).ptr(), 0}; }

LayerKind::Built build_pose26(const LayerRow& row) { return {Detect(pose_options(row).pose26(true)).ptr(), 0}; }

}  // namespace

// Heads, run by DetectionModel itself, as Detect is.
LayerKind pose_kind() { return {"Pose", kHead, {"Pose", "DFL", "DWConv", "Conv"}, build_pose, nullptr}; }

LayerKind pose26_kind() {
  return {"Pose26", kHead, {"Pose26", "RealNVP", "DFL", "DWConv", "Conv"}, build_pose26, nullptr};
}

}  // namespace yolotrain::nn::detail
