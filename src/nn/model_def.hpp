#pragma once

// A model YAML read and checked, before any module is built (private to src/nn).

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace yolotrain::nn::detail {

/// One row [from, repeats, module, args] of a model YAML.
struct LayerDef {
  int64_t index = 0;              ///< layer index (backbone rows first, then head rows)
  std::string where;              ///< "backbone[3]" / "head[12]" and the line, for messages
  std::vector<int64_t> from;      ///< absolute indices of the inputs; -1 is the image
  bool from_list = false;         ///< `from` was written as a list
  int64_t repeats = 1;            ///< repeats after depth scaling
  std::string module;             ///< module name as written, "nn." stripped
  YAML::Node args;                ///< the args list
};

/// A model YAML with its scale applied.
struct ModelDef {
  std::filesystem::path path;
  std::string scale;
  int64_t nc = 0;
  int64_t ch = 3;
  double depth = 1.0;
  double width = 1.0;
  double max_channels = 0;  ///< infinite when the YAML has no scales
  int64_t reg_max = 16;     ///< DFL bins (YAML `reg_max`; YOLO26: 1)
  bool end2end = false;     ///< YAML `end2end`: Detect gets the one-to-one branch (YOLO26)
  /// YAML `kpt_shape` ([keypoints, dims]; a Pose row's `kpt_shape` argument), or the dataset's
  /// when given (Ultralytics' PoseModel data_kpt_shape); empty when neither.
  std::vector<int64_t> kpt_shape;
  /// Ultralytics 8.4's parse_model and modules (true) or 8.3's (DetectionModelOptions::ultralytics).
  bool ultralytics84 = true;
  std::vector<LayerDef> layers;
};

/// Reads and checks `path`; `scale` picks a row of `scales` (first one when empty), `nc`
/// overrides the YAML's nc, `ch` is used when the YAML has none, a non-empty `kpt_shape` the YAML's.
/// Throws yolotrain::Error naming the file and the row.
ModelDef load_model_def(const std::filesystem::path& path, const std::string& scale,
                        std::optional<int64_t> nc, int64_t ch, bool ultralytics84 = true,
                        const std::vector<int64_t>& kpt_shape = {});

/// "model YAML <path>: <where>: " prefix for messages about a row.
std::string row_context(const ModelDef& def, const LayerDef& layer);

}  // namespace yolotrain::nn::detail
