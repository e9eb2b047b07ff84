#pragma once

// Private helpers that reproduce NumPy's summation and linspace, so float64 figures match the
// reference to the last bits where that is cheap.

#include <cstddef>
#include <vector>

namespace yolotrain::metrics::detail {

/// numpy.add.reduce of a float64 array: pairwise summation (8 accumulators, blocks of 128).
double numpy_sum(const double* a, std::size_t n, std::size_t stride = 1);
inline double numpy_sum(const std::vector<double>& a) { return numpy_sum(a.data(), a.size()); }
/// numpy mean of a 1-D float64 array.
inline double numpy_mean(const std::vector<double>& a) {
  return a.empty() ? 0.0 : numpy_sum(a) / static_cast<double>(a.size());
}

/// numpy.linspace(start, stop, num) with the endpoint.
std::vector<double> linspace(double start, double stop, std::size_t num);

}  // namespace yolotrain::metrics::detail
