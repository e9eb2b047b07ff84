#pragma once

#include <cmath>
#include <cstdint>

namespace yolotrain::data {

/// A small, portable random generator (splitmix64 seeding, xoshiro256** stream). Every
/// augmentation draws from an Rng made from (seed, epoch, sample position), so its results never
/// depend on thread timing, worker count or the platform's <random> implementation.
class Rng {
 public:
  /// A generator whose stream is a function of the given keys only.
  explicit Rng(std::uint64_t seed, std::uint64_t a = 0, std::uint64_t b = 0) {
    std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (a + 1)) ^ (0xD1B54A32D192ED03ull * (b + 7));
    for (auto& s : s_) s = splitmix(x);
  }
  /// 64 random bits.
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n) (n > 0).
  std::uint64_t below(std::uint64_t n) { return static_cast<std::uint64_t>(uniform() * static_cast<double>(n)) % n; }
  /// Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Gamma(shape, 1) by Marsaglia and Tsang (shape >= 1).
  double gamma(double shape) {
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = uniform();
      if (std::log(u + 1e-300) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }
  /// Beta(a, b) (a, b >= 1), as MixUp's ratio.
  double beta(double a, double b) {
    const double x = gamma(a), y = gamma(b);
    return x / (x + y);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t s_[4];
};

}  // namespace yolotrain::data
