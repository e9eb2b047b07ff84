// RandAugment (auto_augment=randaugment, classification's default in Ultralytics 8.4): each of
// torchvision 0.14.1's fourteen operators at its magnitude 9, both signs, against what torchvision's
// own _apply_op gives on a PIL image with Pillow 9.4.0 (scripts/torchvision_randaugment.py ->
// data/randaugment/): the same pixels, every byte.
#include <ATen/ATen.h>

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "yolotrain/data/classify_transforms.hpp"
#include "yolotrain/data/rand_augment.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;

namespace {

const fs::path kData = fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/data/data/randaugment";

RandAugmentOp op_named(const std::string& name) {
  for (int k = 0; k < kRandAugmentOps; ++k) {
    if (rand_augment_name(static_cast<RandAugmentOp>(k)) == name) return static_cast<RandAugmentOp>(k);
  }
  FAIL("no RandAugment operator " << name);
  return RandAugmentOp::Identity;
}

// How many bytes differ, and the largest difference.
std::pair<int, int> differences(const Image& a, const Image& b) {
  int count = 0, largest = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) {
    const int d = std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    count += d != 0;
    largest = std::max(largest, d);
  }
  return {count, largest};
}

}  // namespace

TEST_CASE("RandAugment's operators give torchvision's own pixels on a PIL image", "[data][classify]") {
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(kData / "randaugment.json"));
  const Image input = decode_image(kData / "input.png");
  REQUIRE(input.height == 32);
  REQUIRE(input.width == 40);
  std::set<std::string> seen;
  for (const auto& entry : meta["ops"]) {
    const std::string name = entry["op"];
    const double magnitude = entry["magnitude"];
    INFO(name << " at " << magnitude);
    const RandAugmentOp op = op_named(name);
    seen.insert(name);
    CHECK(rand_augment_magnitude(op, input.height, input.width) == std::abs(magnitude));
    CHECK(rand_augment_signed(op) == (name != "Identity" && name != "Posterize" && name != "Solarize" &&
                                      name != "AutoContrast" && name != "Equalize"));
    Image ours = input;
    apply_rand_augment_op(ours, op, magnitude);
    const Image theirs = decode_image(kData / entry["file"].get<std::string>());
    const auto [count, largest] = differences(ours, theirs);
    CHECK(count == 0);
    CHECK(largest == 0);
  }
  CHECK(seen.size() == std::size_t(kRandAugmentOps));
}

TEST_CASE("RandAugment draws each operator alike, negates a signed one half the time, and repeats with its seed",
          "[data][classify]") {
  const Image input = decode_image(kData / "input.png");
  std::map<std::string, int> results;  // each distinct single-operator result, by its bytes
  for (int k = 0; k < kRandAugmentOps; ++k) {
    const auto op = static_cast<RandAugmentOp>(k);
    const double m = rand_augment_magnitude(op, input.height, input.width);
    for (double sign : {1.0, -1.0}) {
      Image im = input;
      apply_rand_augment_op(im, op, sign * m);
      results.emplace(std::string(im.pixels.begin(), im.pixels.end()), k);
    }
  }
  // One operator applied alone: the second draw made Identity so that the first shows.
  Rng rng(7);
  std::map<int, int> drawn;
  for (int n = 0; n < 1400; ++n) {
    Rng probe = rng;
    const auto op = static_cast<int>(probe.below(kRandAugmentOps));
    ++drawn[op];
    Image a = input, b = input;
    Rng again = rng;
    rand_augment(a, rng);
    rand_augment(b, again);
    REQUIRE(a.pixels == b.pixels);  // the same draws, the same image
  }
  REQUIRE(drawn.size() == std::size_t(kRandAugmentOps));
  for (const auto& [op, count] : drawn) CHECK(count > 60);  // 100 expected of each
  CHECK(results.size() >= 20);  // the operators (and signs) do different things
}

TEST_CASE("classification augmentation uses RandAugment in place of the colour jitter when asked",
          "[data][classify]") {
  const Image input = decode_image(kData / "input.png");
  AugmentConfig hyp;
  hyp.scale = 0.0;  // the whole image: the crop is the identity here
  hyp.fliplr = 0.0;
  hyp.erasing = 0.0;
  hyp.hsv_h = hyp.hsv_s = hyp.hsv_v = 0.0;  // the jitter does nothing
  Rng plain_rng(3);
  const Image plain = classify_augment(input, 32, hyp, plain_rng);
  hyp.rand_augment = true;
  int changed = 0;
  Rng rng(3);
  for (int n = 0; n < 20; ++n) changed += classify_augment(input, 32, hyp, rng).pixels != plain.pixels;
  CHECK(changed >= 15);  // two of fourteen operators each time; Identity twice is rare
}
