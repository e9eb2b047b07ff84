#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace yolotrain::data {

/// Options of the synthetic "shapes" dataset.
struct ShapesOptions {
  std::uint64_t seed = 0;
  int train = 256;   ///< training images
  int val = 64;      ///< validation images
  int imgsz = 320;   ///< image side in pixels
  int quality = 90;  ///< JPEG quality
  /// The segmentation variant (`data=shapes-seg`): each shape is filled from a polygon (rectangle 4
  /// points, ellipse 32, triangle 3, cross 12; vertices at 1/16 px) and labelled with that very
  /// polygon (`class x1 y1 ...`), so the outline is exact. Other bytes than the box variant's.
  bool segments = false;
  /// The pose variant (`data=shapes-pose`): shapes filled from the same polygons, each labelled with
  /// its box and 5 keypoints exact to 1/16 px (kpt_shape [5, 3], visibility 2): the box's centre and
  /// the shape's top, bottom, left and right points (the rectangle's edge midpoints, the ellipse's
  /// extremes, the cross's arm tips; the triangle's apex, base midpoint and base corners), so that
  /// flip_idx [0, 1, 2, 4, 3] mirrors them. Not with `segments`.
  bool keypoints = false;
  /// The classification variant (`data=shapes-cls`): one shape per image, 40-90 % of the side in
  /// each direction, its class image index % 4 (so the classes are balanced), written in
  /// Ultralytics' classification layout: train/<class>/*.jpg and val/<class>/*.jpg, no label files,
  /// no data.yaml (write_shapes_dataset() then returns the folder). Not with `segments` or `keypoints`.
  bool classify = false;
  /// The oriented-box variant (`data=shapes-obb`, Ultralytics' OBB format): each shape elongated
  /// (long side 24-48 % of the image side, short side 45-80 % of the long one), turned by an angle in
  /// [0, pi), filled from its polygon turned likewise (vertices at 1/16 px), and labelled with the 4
  /// corners of its turned rectangle (`class x1 y1 x2 y2 x3 y3 x4 y4`, normalized): the exact
  /// oriented box of the rectangle, ellipse, triangle or cross. Not with the other variants.
  bool oriented = false;
};

/// The options of `data=shapes-cls` (and `yolo_dataset shapes DIR --classes`): the classification
/// variant at 64 px (a -cls model trains on it at imgsz 64 without a resize), 512 training and 128
/// validation images.
ShapesOptions shapes_cls_options();

/// The options of `data=shapes-obb` (and `yolo_dataset shapes DIR --obb`): the oriented variant at
/// 320 px, 256 training and 64 validation images.
ShapesOptions shapes_obb_options();

/// The shapes-pose set's keypoints per shape: kpt_shape [5, 3], its flip_idx and their names.
constexpr int kShapesKeypoints = 5;
const int* shapes_flip_idx();
const char* const* shapes_keypoint_names();

/// The class names of the shapes dataset: rectangle, ellipse, triangle, cross.
const char* const* shapes_class_names(int* count);

/// Writes a YOLO-layout dataset of shapes (4 classes; 1-4 vivid shapes per image, each 18-45 % of
/// the side, apart from each other, inside the image, on a muted gradient with light noise) to
/// `out`: images/{train,val}/*.jpg, labels/{train,val}/*.txt (boxes, polygons with
/// ShapesOptions::segments, boxes and keypoints with ShapesOptions::keypoints) and data.yaml
/// (path: .; the pose variant's with kpt_shape, flip_idx and kpt_names). The bytes are a function of the options only.
/// Returns the data.yaml path (the folder itself for ShapesOptions::classify).
std::filesystem::path write_shapes_dataset(const std::filesystem::path& out, const ShapesOptions& options = {});

struct Sample;
/// Image `index` of split `split` ("train" or "val") of that set, in memory: the pixels before
/// JPEG encoding and the boxes as floats (the files hold them to 6 decimals).
Sample shapes_sample(const ShapesOptions& options, const std::string& split, int index);

}  // namespace yolotrain::data
