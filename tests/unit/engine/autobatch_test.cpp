// AutoBatch's fitting and choice (Ultralytics' utils/autobatch.py) on synthetic memory curves.
#include <ATen/ATen.h>

#include "yolotrain/engine/autobatch.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/error.hpp"

#include "catch.hpp"

#include <cmath>
#include <functional>
#include <stdexcept>

namespace en = yolotrain::engine;

namespace {

// A device of `total` GiB whose trial step of b images reserves curve(b) GB, or runs out of memory.
class CurveProbe : public en::MemoryProbe {
 public:
  CurveProbe(double total, std::function<std::optional<double>(std::int64_t)> curve)
      : total_(total), curve_(std::move(curve)) {}
  en::DeviceMemory memory() override { return {"CUDA:0 (test)", total_, 0.5, 0.25}; }
  std::optional<double> measure(std::int64_t batch) override {
    tried.push_back(batch);
    return curve_(batch);
  }
  std::vector<std::int64_t> tried;

 private:
  double total_;
  std::function<std::optional<double>(std::int64_t)> curve_;
};

bool has_line(const en::AutoBatchChoice& c, const std::string& text) {
  for (const auto& l : c.lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("AutoBatch fits a linear memory curve and fills the fraction of the free memory", "[engine][autobatch]") {
  // 24 GiB, 0.75 GiB in use: free 23.25 GiB; 0.5 GB + 0.25 GB per image.
  CurveProbe probe(24, [](std::int64_t b) { return 0.5 + 0.25 * static_cast<double>(b); });
  const auto c = en::autobatch(&probe, 640, 0.6);
  CHECK(probe.tried == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64});  // 16 GiB or more: up to 64
  CHECK(c.slope == Approx(0.25));
  CHECK(c.intercept == Approx(0.5));
  CHECK(c.batch == static_cast<std::int64_t>((23.25 * 0.6 - 0.5) / 0.25));  // int(): 53
  CHECK(c.batch == 53);
  CHECK_FALSE(c.fallback);
  CHECK(c.used_fraction == Approx((0.5 + 0.25 * 53 + 0.75) / 24));
  CHECK(has_line(c, "AutoBatch: Computing optimal batch size for imgsz=640 at 60.0% CUDA memory utilization."));
  CHECK(has_line(c, "AutoBatch: CUDA:0 (test) 24.00G total, 0.50G reserved, 0.25G allocated, 23.25G free"));
  CHECK(has_line(c, "AutoBatch: Using batch-size 53 for CUDA:0 (test) 14.50G/24.00G (60%)"));
}

TEST_CASE("AutoBatch tries up to 16 images below 16 GiB and takes another fraction", "[engine][autobatch]") {
  CurveProbe probe(8, [](std::int64_t b) { return 0.4 + 0.1 * static_cast<double>(b); });
  const auto c = en::autobatch(&probe, 320, 0.9);
  CHECK(probe.tried == std::vector<std::int64_t>{1, 2, 4, 8, 16});
  CHECK(c.batch == static_cast<std::int64_t>((7.25 * 0.9 - 0.4) / 0.1));
  CHECK(has_line(c, "at 90.0% CUDA memory utilization"));
}

TEST_CASE("AutoBatch on a noisy curve stays near the line's answer", "[engine][autobatch]") {
  const double noise[] = {0.02, -0.015, 0.01, -0.02, 0.015, -0.01, 0.005};
  int k = 0;
  CurveProbe probe(24, [&](std::int64_t b) { return 0.5 + 0.25 * static_cast<double>(b) + noise[k++]; });
  const auto c = en::autobatch(&probe, 640, 0.6);
  CHECK(c.slope == Approx(0.25).margin(0.002));
  CHECK(c.batch >= 52);
  CHECK(c.batch <= 54);
}

TEST_CASE("AutoBatch stops below the first size that ran out of memory", "[engine][autobatch]") {
  // The line says 53 images fit, but 32 did not: Ultralytics takes the size before, 16.
  CurveProbe probe(24, [](std::int64_t b) -> std::optional<double> {
    if (b >= 32) return std::nullopt;
    return 0.5 + 0.25 * static_cast<double>(b);
  });
  const auto c = en::autobatch(&probe, 640, 0.6);
  CHECK(c.batch == 16);
  CHECK_FALSE(c.gb[5].has_value());
  // A small fraction the line puts below the failing size is kept.
  CurveProbe small(24, [](std::int64_t b) -> std::optional<double> {
    if (b >= 32) return std::nullopt;
    return 0.5 + 0.25 * static_cast<double>(b);
  });
  CHECK(en::autobatch(&small, 640, 0.2).batch == static_cast<std::int64_t>((23.25 * 0.2 - 0.5) / 0.25));
}

TEST_CASE("AutoBatch falls back to 16 and says why", "[engine][autobatch]") {
  SECTION("out of memory from the first size on: nothing to fit") {
    CurveProbe probe(24, [](std::int64_t b) -> std::optional<double> {
      if (b >= 2) return std::nullopt;
      return 1.0;
    });
    const auto c = en::autobatch(&probe, 640, 0.6);
    CHECK(c.batch == 16);
    CHECK(c.fallback);
    CHECK(has_line(c, "too few to fit; using default batch-size 16"));
  }
  SECTION("a curve that falls with the batch (an anomaly)") {
    CurveProbe probe(24, [](std::int64_t b) { return 10.0 - 0.1 * static_cast<double>(b); });
    const auto c = en::autobatch(&probe, 640, 0.6);
    CHECK(c.batch == 16);
    CHECK(has_line(c, "CUDA anomaly detected"));
  }
  SECTION("a line that allows more than 1024 images") {
    CurveProbe probe(24, [](std::int64_t b) { return 0.001 * static_cast<double>(b); });
    CHECK(en::autobatch(&probe, 640, 0.6).batch == 16);
  }
  SECTION("a probe that fails") {
    CurveProbe probe(24, [](std::int64_t) -> std::optional<double> { throw std::runtime_error("driver gone"); });
    const auto c = en::autobatch(&probe, 640, 0.6);
    CHECK(c.batch == 16);
    CHECK(has_line(c, "AutoBatch: WARNING error detected: driver gone, using default batch-size 16."));
  }
  SECTION("no CUDA device (training on the CPU), as Ultralytics") {
    const auto c = en::autobatch(nullptr, 640, 0.6);
    CHECK(c.batch == 16);
    CHECK(has_line(c, "AutoBatch: WARNING intended for CUDA devices, using default batch-size 16"));
  }
}

TEST_CASE("batch takes images, -1 or a fraction, and nothing else", "[engine][autobatch]") {
  en::TrainConfig c;
  c.set("batch", "-1");
  CHECK(c.autobatch == 0.6);
  CHECK(c.get("batch") == "-1");
  c.set("batch", "0.75");
  CHECK(c.autobatch == 0.75);
  CHECK(c.get("batch") == "0.75");
  c.set("batch", "8");
  CHECK(c.autobatch == 0);
  CHECK(c.batch == 8);
  CHECK(c.get("batch") == "8");
  for (const char* bad : {"0", "-2", "1.5", "abc", "", "200000"}) {
    INFO(bad);
    CHECK_THROWS_WITH(c.set("batch", bad), Catch::Contains("argument 'batch'") && Catch::Contains("AutoBatch"));
  }
  en::TrainConfig round;
  c.set("batch", "-1");
  round.load_yaml_text(c.to_yaml(), "test");
  CHECK(round.autobatch == 0.6);
}
