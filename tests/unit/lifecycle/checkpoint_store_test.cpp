#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"

#include "catch.hpp"

#include <fstream>
#include <thread>

#include "test_support.hpp"

namespace fs = std::filesystem;
namespace lc = yolotrain::lifecycle;
using yolotrain::test::TempDir;

namespace {

lc::Checkpoint make_checkpoint(std::int64_t step, std::int64_t size = 16) {
  lc::Checkpoint c;
  c.meta.step = step;
  c.meta.epoch = step / 10;
  c.meta.config = "lr0: 0.01\nbatch: 16\n";
  c.meta.extra = {{"best_fitness", "0.25"}, {"note", "hello"}};
  c.tensors.emplace_back("model.w", at::arange(size, at::kFloat) * static_cast<double>(step));
  c.tensors.emplace_back("model.bn.num_batches_tracked", at::tensor({step}, at::kLong));
  c.tensors.emplace_back("rng", at::randint(0, 255, {32}, at::kByte));
  return c;
}

lc::CheckpointStoreOptions options_for(const fs::path& dir, int keep = 2, std::string model = "net") {
  lc::CheckpointStoreOptions o;
  o.dir = dir;
  o.keep_last = keep;
  o.model = std::move(model);
  return o;
}

void patch_byte(const fs::path& path, std::uint64_t offset_from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const auto pos = static_cast<std::streamoff>(f.tellg()) - static_cast<std::streamoff>(offset_from_end);
  f.seekg(pos);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(pos);
  f.write(&c, 1);
}

void patch_at(const fs::path& path, std::streamoff offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("a checkpoint round-trips tensors and metadata exactly", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir.path()));
  const lc::Checkpoint original = make_checkpoint(42);
  const fs::path path = store.save(original);
  CHECK(path.filename() == "ckpt-000000000042.ytckpt");
  const lc::Checkpoint loaded = lc::CheckpointStore::load(path);
  CHECK(loaded.meta.step == 42);
  CHECK(loaded.meta.epoch == 4);
  CHECK(loaded.meta.config == original.meta.config);
  CHECK(loaded.meta.extra == original.meta.extra);
  CHECK(loaded.meta.model == "net");
  CHECK(loaded.meta.format_version == lc::kCheckpointFormatVersion);
  CHECK(loaded.meta.wall_time > 1.6e9);
  REQUIRE(loaded.tensors.size() == original.tensors.size());
  for (std::size_t i = 0; i < loaded.tensors.size(); ++i) {
    CHECK(loaded.tensors[i].first == original.tensors[i].first);
    CHECK(loaded.tensors[i].second.scalar_type() == original.tensors[i].second.scalar_type());
    CHECK(loaded.tensors[i].second.equal(original.tensors[i].second));
  }
  CHECK_THROWS_WITH(loaded.tensor("missing"), Catch::Contains("model.w"));
}

TEST_CASE("metadata is readable without the tensors", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir.path()));
  const fs::path path = store.save(make_checkpoint(7, 100000));
  patch_byte(path, 10);  // corrupt the payload: the metadata still verifies
  const lc::CheckpointMeta meta = lc::CheckpointStore::read_meta(path);
  CHECK(meta.step == 7);
  CHECK(meta.extra.at("note") == "hello");
  CHECK_THROWS_WITH(lc::CheckpointStore::load(path), Catch::Contains("payload checksum mismatch"));
}

TEST_CASE("corrupt checkpoints are detected and named", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir.path()));
  const fs::path path = store.save(make_checkpoint(3));
  const std::string good = lc::read_file(path);
  auto restore = [&] { lc::atomic_write(path, good); };

  SECTION("a flipped payload byte") {
    patch_byte(path, 1);
    CHECK_THROWS_WITH(lc::CheckpointStore::load(path), Catch::Contains("payload checksum mismatch") &&
                                                           Catch::Contains(path.string()));
  }
  SECTION("a flipped metadata byte") {
    patch_at(path, 96 + 5, "#");
    CHECK_THROWS_WITH(lc::CheckpointStore::read_meta(path), Catch::Contains("metadata checksum mismatch"));
  }
  SECTION("a truncated file") {
    fs::resize_file(path, good.size() - 100);
    CHECK_THROWS_WITH(lc::CheckpointStore::load(path), Catch::Contains("truncated"));
    fs::resize_file(path, 50);
    CHECK_THROWS_WITH(lc::CheckpointStore::load(path), Catch::Contains("truncated"));
  }
  SECTION("a zero-length file") {
    fs::resize_file(path, 0);
    CHECK_THROWS_WITH(lc::CheckpointStore::load(path), Catch::Contains("empty"));
  }
  SECTION("wrong magic bytes") {
    patch_at(path, 0, "PK\x03\x04");
    CHECK_THROWS_WITH(lc::CheckpointStore::load(path), Catch::Contains("not a yolotrain checkpoint"));
  }
  SECTION("a newer format version") {
    patch_at(path, 8, std::string("\x09\x00\x00\x00", 4));
    CHECK_THROWS_WITH(lc::CheckpointStore::load(path), Catch::Contains("format version 9 is newer"));
  }
  restore();
  CHECK(lc::CheckpointStore::load(path).meta.step == 3);
}

TEST_CASE("load_latest skips bad newer files and uses the previous one", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir.path(), 3));
  store.save(make_checkpoint(10));
  store.save(make_checkpoint(20));
  const fs::path newest = store.save(make_checkpoint(30));
  patch_byte(newest, 3);
  lc::atomic_write(dir / "ckpt-000000000040.ytckpt", "garbage from another program");
  const lc::LoadResult r = store.load_latest();
  REQUIRE(r.checkpoint);
  CHECK(r.checkpoint->meta.step == 20);
  CHECK(r.path.filename() == "ckpt-000000000020.ytckpt");
  REQUIRE(r.skipped.size() == 2);
  CHECK(r.skipped[0].path.filename() == "ckpt-000000000040.ytckpt");
  CHECK_THAT(r.skipped[0].reason, Catch::Contains("not a yolotrain checkpoint"));
  CHECK_THAT(r.skipped[1].reason, Catch::Contains("checksum"));
}

TEST_CASE("an empty folder has nothing to resume", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir / "new"));
  const lc::LoadResult r = store.load_latest();
  CHECK_FALSE(r.checkpoint);
  CHECK(r.skipped.empty());
  CHECK(fs::is_directory(dir / "new"));
}

TEST_CASE("checkpoints of another model are skipped and never rotated away", "[lifecycle]") {
  TempDir dir;
  {
    lc::CheckpointStore other(options_for(dir.path(), 2, "other-net"));
    other.save(make_checkpoint(1));
  }
  lc::CheckpointStore store(options_for(dir.path(), 2, "net"));
  const lc::LoadResult r = store.load_latest();
  CHECK_FALSE(r.checkpoint);
  REQUIRE(r.skipped.size() == 1);
  CHECK_THAT(r.skipped[0].reason, Catch::Contains("written for model 'other-net'"));
  for (int step = 2; step <= 5; ++step) store.save(make_checkpoint(step));
  CHECK(files_in(dir.path()) == std::vector<std::string>{"ckpt-000000000001.ytckpt", "ckpt-000000000004.ytckpt",
                                                         "ckpt-000000000005.ytckpt"});
}

TEST_CASE("the store keeps the last N plus pinned ones", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir.path(), 2));
  store.save_pinned(make_checkpoint(1), "best");
  for (int step = 1; step <= 6; ++step) store.save(make_checkpoint(step * 100));
  CHECK(files_in(dir.path()) ==
        std::vector<std::string>{"best.ytckpt", "ckpt-000000000500.ytckpt", "ckpt-000000000600.ytckpt"});
  CHECK(lc::CheckpointStore::load(dir / "best.ytckpt").meta.step == 1);
  CHECK(store.checkpoints().front().filename() == "ckpt-000000000600.ytckpt");
}

TEST_CASE("opening a store removes temporaries of killed writers", "[lifecycle]") {
  TempDir dir;
  lc::atomic_write(dir / ".ckpt-000000000009.ytckpt.tmp-999999999-0", "half a checkpoint");
  lc::CheckpointStore store(options_for(dir.path()));
  CHECK(files_in(dir.path()).empty());
}

TEST_CASE("a folder path that is a file is refused", "[lifecycle]") {
  TempDir dir;
  lc::atomic_write(dir / "file", "x");
  CHECK_THROWS_WITH(lc::CheckpointStore(options_for(dir / "file")), Catch::Contains("not a folder"));
}

TEST_CASE("async saves never wait for the disk and coalesce", "[lifecycle]") {
  TempDir dir;
  auto options = options_for(dir.path(), 10);
  std::atomic<bool> writing{false};
  std::atomic<int> writes_done{0};
  std::atomic<bool> disk_free{false};
  options.write.on_progress = [&](std::size_t written, std::size_t total) {
    writing = true;
    if (written == total) ++writes_done;
    // The "disk" blocks the first write until the test lets it go (at most 10 s).
    for (int i = 0; i < 1000 && !disk_free; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  lc::CheckpointStore store(options);
  store.save_async(make_checkpoint(1));
  REQUIRE(yolotrain::test::wait_until([&] { return writing.load(); }, std::chrono::seconds(10)));
  for (int step = 2; step <= 20; ++step) store.save_async(make_checkpoint(step));  // returns at once
  CHECK_FALSE(disk_free);  // all 19 were queued while the first write was still blocked
  CHECK(store.busy());
  disk_free = true;
  CHECK(store.wait()->filename() == "ckpt-000000000020.ytckpt");
  CHECK_FALSE(store.busy());
  CHECK(writes_done == 2);  // the blocked one, then only the newest of the 19 queued
  CHECK(files_in(dir.path()) == std::vector<std::string>{"ckpt-000000000001.ytckpt", "ckpt-000000000020.ytckpt"});
}

TEST_CASE("a failed async write surfaces on the next call and in last_error", "[lifecycle]") {
  TempDir dir;
  auto options = options_for(dir.path());
  std::atomic<bool> fail{true};
  options.write.on_progress = [&](std::size_t, std::size_t) {
    if (fail) throw yolotrain::Error("disk on fire");
  };
  lc::CheckpointStore store(options);
  store.save_async(make_checkpoint(1));
  CHECK_THROWS_WITH(store.wait(), Catch::Contains("disk on fire"));
  CHECK(store.last_error().value() == "disk on fire");
  CHECK_NOTHROW(store.wait());  // reported once
  fail = false;
  store.save_async(make_checkpoint(2));
  CHECK(store.wait()->filename() == "ckpt-000000000002.ytckpt");
  CHECK(files_in(dir.path()) == std::vector<std::string>{"ckpt-000000000002.ytckpt"});
}

TEST_CASE("the writer thread ends with the store", "[lifecycle]") {
  TempDir dir;
  const int before = yolotrain::test::thread_count();
  {
    lc::CheckpointStore store(options_for(dir.path()));
    store.save_async(make_checkpoint(1));
    CHECK(yolotrain::test::thread_count() == before + 1);
  }  // the destructor finishes the write and joins
  CHECK(yolotrain::test::thread_count() == before);
  CHECK(files_in(dir.path()) == std::vector<std::string>{"ckpt-000000000001.ytckpt"});
}

TEST_CASE("host_snapshot copies and reuses spare buffers", "[lifecycle]") {
  lc::NamedTensors live = {{"w", at::arange(6, at::kFloat)}, {"n", at::tensor({3}, at::kLong)}};
  lc::NamedTensors snap = lc::host_snapshot(live);
  live[0].second.add_(100);  // training goes on; the snapshot must not change
  CHECK(snap[0].second.equal(at::arange(6, at::kFloat)));
  const void* reused = snap[0].second.data_ptr();
  lc::NamedTensors again = lc::host_snapshot(live, std::move(snap));
  CHECK(again[0].second.data_ptr() == reused);
  CHECK(again[0].second.equal(live[0].second));
  CHECK(again[1].second.equal(live[1].second));
}

TEST_CASE("the writer hands its finished snapshot back for reuse", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir.path()));
  CHECK(store.take_spare().empty());
  lc::Checkpoint c = make_checkpoint(1);
  const void* data = c.tensors[0].second.data_ptr();
  store.save_async(std::move(c));
  store.wait();
  const lc::NamedTensors spare = store.take_spare();
  REQUIRE(spare.size() == 3);
  CHECK(spare[0].second.data_ptr() == data);
  CHECK(store.take_spare().empty());
}

TEST_CASE("last_saved follows the rotating saves and not the pinned ones", "[lifecycle]") {
  TempDir dir;
  lc::CheckpointStore store(options_for(dir.path()));
  store.save(make_checkpoint(5));
  store.save_pinned(make_checkpoint(9), "best");
  const auto saved = store.last_saved();
  REQUIRE(saved);
  CHECK(saved->first.filename() == "ckpt-000000000005.ytckpt");
  CHECK(saved->second.step == 5);
  CHECK(saved->second.wall_time > 1.6e9);
  CHECK(store.wait()->filename() == "ckpt-000000000005.ytckpt");
}
