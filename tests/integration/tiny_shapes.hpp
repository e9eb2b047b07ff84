#pragma once
// The datasets of the yolo_train integration tests: 16 training and 8 validation images of 64 px
// from the built-in shapes generator (boxes, polygons, keypoints, class folders or oriented boxes), written once per
// test process.
#include <filesystem>

#include "test_support.hpp"
#include "yolotrain/data/synthetic.hpp"

namespace yolotrain::test {

inline const std::filesystem::path& tiny_shapes_dataset() {
  static TempDir dir;
  static const std::filesystem::path yaml =
      data::write_shapes_dataset(dir / "shapes", data::ShapesOptions{0, 16, 8, 64, 90});
  return yaml;
}

/// The same size of set with polygon labels (ShapesOptions::segments), for segmentation runs.
inline const std::filesystem::path& tiny_shapes_seg_dataset() {
  static TempDir dir;
  static const std::filesystem::path yaml =
      data::write_shapes_dataset(dir / "shapes-seg", data::ShapesOptions{0, 16, 8, 64, 90, true});
  return yaml;
}

/// The same size of set with pose labels (ShapesOptions::keypoints: kpt_shape [5, 3]), for pose runs.
inline const std::filesystem::path& tiny_shapes_pose_dataset() {
  static TempDir dir;
  static const std::filesystem::path yaml =
      data::write_shapes_dataset(dir / "shapes-pose", data::ShapesOptions{0, 16, 8, 64, 90, false, true});
  return yaml;
}

/// The same size of set as class folders (ShapesOptions::classify), for classification runs: the folder.
inline const std::filesystem::path& tiny_shapes_cls_dataset() {
  static TempDir dir;
  static const std::filesystem::path folder = [] {
    data::ShapesOptions o = data::shapes_cls_options();
    o.train = 16;
    o.val = 8;
    return data::write_shapes_dataset(dir / "shapes-cls", o);
  }();
  return folder;
}

/// The same size of set with oriented boxes (ShapesOptions::oriented: corners), for OBB runs.
inline const std::filesystem::path& tiny_shapes_obb_dataset() {
  static TempDir dir;
  static const std::filesystem::path yaml = [] {
    data::ShapesOptions o = data::shapes_obb_options();
    o.train = 16, o.val = 8, o.imgsz = 64;
    return data::write_shapes_dataset(dir / "shapes-obb", o);
  }();
  return yaml;
}

}  // namespace yolotrain::test
