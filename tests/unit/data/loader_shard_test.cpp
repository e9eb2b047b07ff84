// The loader's sharding across ranks (DistributedSampler semantics) and the global-sample resume rule.
#include <ATen/ATen.h>

#include "catch.hpp"

#include <set>

#include "test_support.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/error.hpp"

using namespace yolotrain::data;
using yolotrain::test::TempDir;

namespace {

/// 22 training images of the shapes dataset (160 px) in a temporary folder.
const Dataset& train_set() {
  static TempDir dir;
  static const Dataset ds = [] {
    ShapesOptions o;
    o.seed = 11, o.train = 22, o.val = 2, o.imgsz = 160;
    return load_split(load_data_yaml(write_shapes_dataset(dir.path(), o)), "train");
  }();
  return ds;
}

LoaderOptions options(int batch, int rank, int world) {
  LoaderOptions o;
  o.batch = batch, o.imgsz = 128, o.workers = 2, o.seed = 5, o.epochs = 10, o.close_mosaic = 2;
  o.hyp.degrees = 5, o.hyp.mixup = 0.3;  // every random path: they must follow the global position
  o.rank = rank, o.world_size = world;
  return o;
}

std::vector<Batch> read_epoch(Loader& loader, int epoch) {
  loader.seek(epoch);
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

/// Image `i` of a batch: pixels and its boxes (class, xywh) as one comparable pair.
std::pair<at::Tensor, at::Tensor> image(const Batch& b, int i) {
  const at::Tensor rows = b.batch_idx.eq(static_cast<float>(i));
  return {b.img[i], at::cat({b.cls.index({rows}), b.bboxes.index({rows})}, 1)};
}

}  // namespace

TEST_CASE("shard: positions interleave ranks and wrap to equal lengths", "[data][loader]") {
  CHECK(shard_positions(22, 0, 2) == std::vector<std::size_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20});
  CHECK(shard_positions(22, 1, 2).back() == 21);
  // 22 over 4 ranks: padded to 24, positions 22 and 23 wrap to records 0 and 1 of the order.
  std::multiset<std::size_t> all;
  for (int r = 0; r < 4; ++r) {
    const auto p = shard_positions(22, r, 4);
    CHECK(p.size() == 6);
    for (std::size_t x : p) all.insert(x % 22);
  }
  CHECK(all.size() == 24);
  CHECK(all.count(0) == 2);
  CHECK(all.count(1) == 2);
  CHECK(all.count(2) == 1);
  CHECK(shard_positions(5, 0, 1) == std::vector<std::size_t>{0, 1, 2, 3, 4});
  CHECK_THROWS_AS(shard_positions(5, 2, 2), yolotrain::Error);
}

TEST_CASE("shard: two ranks with batch 2 read the batches of one process with batch 4", "[data][loader]") {
  Loader whole(train_set(), options(4, 0, 1));
  Loader rank0(train_set(), options(2, 0, 2)), rank1(train_set(), options(2, 1, 2));
  CHECK(rank0.samples_per_epoch() == 11);
  CHECK(rank0.batches_per_epoch() == 6);
  CHECK(rank1.batches_per_epoch() == 6);
  for (int epoch : {0, 9}) {  // mosaic and mixup on; then closed
    const auto expected = read_epoch(whole, epoch);
    const auto got0 = read_epoch(rank0, epoch), got1 = read_epoch(rank1, epoch);
    REQUIRE(expected.size() == 6);
    REQUIRE(got0.size() == 6);
    REQUIRE(got1.size() == 6);
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const Batch* ranks[2] = {&got0[k], &got1[k]};
      for (int i = 0; i < expected[k].img.size(0); ++i) {  // global image i = rank i % 2, local image i / 2
        INFO("epoch " << epoch << " batch " << k << " image " << i);
        const auto want = image(expected[k], i);
        const auto have = image(*ranks[i % 2], i / 2);
        CHECK(expected[k].im_file[i] == ranks[i % 2]->im_file[i / 2]);
        CHECK(at::equal(want.first, have.first));
        CHECK(at::equal(want.second, have.second));
      }
    }
  }
}

TEST_CASE("shard: every rank has the same number of batches and the padding wraps", "[data][loader]") {
  std::vector<std::string> seen;
  for (int r = 0; r < 4; ++r) {
    Loader loader(train_set(), options(4, r, 4));
    CHECK(loader.batches_per_epoch() == 2);  // 6 samples per rank: 4 + 2
    const auto epoch = read_epoch(loader, 1);
    REQUIRE(epoch.size() == 2);
    CHECK(epoch[1].img.size(0) == 2);
    for (const auto& b : epoch) seen.insert(seen.end(), b.im_file.begin(), b.im_file.end());
  }
  CHECK(seen.size() == 24);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 22);  // two repeats, nothing missing
}

TEST_CASE("shard: world_size 1 is the unsharded loader", "[data][loader]") {
  LoaderOptions plain = options(4, 0, 1);
  Loader a(train_set(), plain);
  CHECK(a.batches_per_epoch() == 6);
  CHECK(a.samples_per_epoch() == 22);
  CHECK(a.order(3) == Loader(train_set(), options(2, 1, 2)).order(3));  // order() is the global order
}

TEST_CASE("shard: the data position in global samples resumes on another world size", "[data][loader]") {
  Loader two(train_set(), options(2, 0, 2)), one(train_set(), options(4, 0, 1)), odd(train_set(), options(3, 0, 1));
  // 3 batches on each of 2 ranks with batch 2 = 12 global samples = batch 3 of one process with batch 4.
  CHECK(two.global_samples(3) == 12);
  CHECK(one.batch_for_global_samples(12) == 3);
  CHECK(two.batch_for_global_samples(one.global_samples(3)) == 3);
  // Another global batch: the previous boundary (some samples are read again, none skipped).
  CHECK(odd.batch_for_global_samples(one.global_samples(1)) == 1);  // 4 samples -> batch 1 (3 samples)
  CHECK(one.batch_for_global_samples(one.global_samples(6)) == 6);  // the end of the epoch
  CHECK(one.batch_for_global_samples(1000) == 6);
  // The two-rank batches after the resume point are the one-process batches after it.
  const auto whole = read_epoch(one, 2);
  two.seek(2, two.batch_for_global_samples(one.global_samples(4)));
  const auto b = two.next();
  REQUIRE(b);
  CHECK(b->im_file[0] == whole[4].im_file[0]);
  CHECK(b->im_file[1] == whole[4].im_file[2]);
}

TEST_CASE("shard: a rank outside the world is refused", "[data][loader]") {
  CHECK_THROWS_WITH(Loader(train_set(), options(2, 2, 2)), Catch::Contains("rank 2 of world_size 2"));
  CHECK_THROWS_AS(Loader(train_set(), options(2, -1, 2)), yolotrain::Error);
}
