#pragma once

// What the nn tests share: scripts/ultralytics_reference.py run over a .pt (Ultralytics' own
// forward, transcribed, over the modules pickled in it), the tolerance its outputs are compared
// with, a parameter count, and the reference scripts' tensors (from_json, canonical_rows).
#include <ATen/ATen.h>

#include "test_support.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <tuple>
#include <string>
#include <vector>

namespace yolotrain::test {

inline int64_t count_parameters(nn::DetectionModelImpl& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

inline void write_floats(const std::filesystem::path& path, const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  std::ofstream(path, std::ios::binary)
      .write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
}

/// Ultralytics' eval forward of `x` through the .pt's own pickled modules, shaped like `like`: the
/// decoded output, then each raw level (an end-to-end head: the top-k output, the one-to-many
/// levels, the one-to-one levels).
inline std::vector<at::Tensor> reference_forward(const std::filesystem::path& pt, const at::Tensor& x,
                                                 const std::vector<at::Tensor>& like,
                                                 const std::filesystem::path& dir) {
  write_floats(dir / "in.f32", x);
  const std::string cmd = "/usr/bin/python3 " + std::string(YOLOTRAIN_SOURCE_DIR) +
                          "/scripts/ultralytics_reference.py '" + pt.string() + "' '" + (dir / "in.f32").string() +
                          "' " + std::to_string(x.size(0)) + " " + std::to_string(x.size(2)) + " " +
                          std::to_string(x.size(3)) + " '" + (dir / "out.f32").string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string bytes = slurp(dir / "out.f32");
  std::vector<at::Tensor> out;
  size_t offset = 0;
  for (const auto& t : like) {
    REQUIRE(offset + t.numel() * sizeof(float) <= bytes.size());
    out.push_back(at::from_blob(const_cast<char*>(bytes.data()) + offset, t.sizes(), at::kFloat).clone());
    offset += t.numel() * sizeof(float);
  }
  CHECK(offset == bytes.size());
  return out;
}

/// Within 1e-4 relative, with a floor of 1e-4 of the output's largest magnitude.
inline bool agrees(const at::Tensor& a, const at::Tensor& ref) {
  const double floor = 1e-4 * ref.abs().max().item<double>();
  return ((a - ref).abs() <= ref.abs() * 1e-4 + floor).all().item<bool>();
}

// An end-to-end output's rows [1, k, 6 + extra] in an order that near-equal scores cannot swap: by
// the score to 1e-3, then x1, then y1. (The formula weights give many anchors scores within float
// rounding of each other, whose top-k order is then rounding's.)
inline at::Tensor canonical_rows(const at::Tensor& t) {
  const at::Tensor rows = t[0];
  std::vector<int64_t> order(static_cast<size_t>(rows.size(0)));
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int64_t i) {
    return std::make_tuple(-std::round(rows[i][4].item<double>() * 1000), rows[i][0].item<float>(),
                           rows[i][1].item<float>());
  };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
  return rows.index_select(0, at::tensor(order)).unsqueeze(0);
}

/// A tensor as the reference scripts write it: {"shape": [...], "values": [...]}.
inline at::Tensor from_json(const nlohmann::json& j) {
  const std::vector<float> values = j["values"].get<std::vector<float>>();
  const std::vector<int64_t> shape = j["shape"].get<std::vector<int64_t>>();
  return at::tensor(values).view(shape);
}


}  // namespace yolotrain::test
