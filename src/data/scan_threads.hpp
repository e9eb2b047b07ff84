#pragma once
// The threads that check a split's files (scan.cpp's labels, class_folders.cpp's images); private to
// src/data.
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::data::detail {

/// Runs fn(i) for i in [0, n) on `threads` threads (lifecycle signals blocked in each).
template <class Fn>
void parallel_for(std::size_t n, int threads, Fn fn) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      lifecycle::block_lifecycle_signals_in_this_thread();
      for (std::size_t i = t; i < n; i += threads) fn(i);
    });
  for (auto& th : pool) th.join();
}

inline int default_threads() {
  return static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace yolotrain::data::detail
