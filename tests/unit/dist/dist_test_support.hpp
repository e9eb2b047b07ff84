#pragma once
// Helpers of the dist tests: starting the dist test worker on several ranks (free_port and
// ScopedEnv are in the shared test_support).
#include <string>
#include <vector>

#include "test_support.hpp"

namespace yolotrain::test {

/// Starts `world` copies of the dist test worker in `mode` on a free port (outputs in `dir`).
inline std::vector<Child> start_workers(const std::string& mode, int world, const std::filesystem::path& dir) {
  const std::string port = std::to_string(free_port());
  std::vector<Child> children;
  for (int r = 0; r < world; ++r)
    children.push_back(spawn({DIST_TEST_WORKER, mode, std::to_string(r), std::to_string(world), port},
                             dir / ("rank" + std::to_string(r) + ".txt")));
  return children;
}

}  // namespace yolotrain::test
