#pragma once

// What the nn tests share: scripts/ultralytics_reference.py run over a .pt (Ultralytics' own
// forward, transcribed, over the modules pickled in it), the tolerance its outputs are compared
// with, and a parameter count.
#include <ATen/ATen.h>

#include "test_support.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

}  // namespace yolotrain::test
