// RemoteMirror and the remote checkpoint functions against a real S3 API server (s3rver, started
// by the tests), with a fault-injecting proxy in front of it for 5xx answers and slowness.
#include <ATen/ATen.h>

#include "yolotrain/remote/remote_mirror.hpp"

#include "catch.hpp"

#include <fstream>
#include <thread>

#include "s3_server.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace lc = yolotrain::lifecycle;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

lc::Checkpoint make_checkpoint(std::int64_t step) {
  lc::Checkpoint c;
  c.meta.step = step;
  c.meta.config = "lr0: 0.01\n";
  c.tensors.emplace_back("model.w", at::arange(4096, at::kFloat) * static_cast<double>(step));
  return c;
}

yolotrain::remote::S3Settings settings_for(const std::string& endpoint, const yt::S3Server& server) {
  yolotrain::remote::S3Settings s;
  s.endpoint = endpoint;
  s.path_style = true;
  s.access_key_id = server.access_key();
  s.secret_access_key = server.secret_key();
  s.credentials_from = "the test";
  s.connect_timeout_s = 2;
  return s;
}

yolotrain::remote::RemoteMirrorOptions quick_retries() {
  yolotrain::remote::RemoteMirrorOptions o;
  o.backoff_initial_s = 0.05;
  o.backoff_max_s = 0.5;
  return o;
}

std::vector<std::int64_t> steps_in(const yolotrain::remote::S3Client& client,
                                   const yolotrain::remote::S3Location& where) {
  std::vector<std::int64_t> out;
  for (const auto& c : yolotrain::remote::list_remote_checkpoints(client, where, "weights/last")) out.push_back(c.step);
  return out;
}

#define REQUIRE_S3_SERVER()                                            \
  if (const auto why = yt::S3Server::unavailable()) {                  \
    WARN("S3 tests skipped: " << *why);                                \
    return;                                                            \
  }

}  // namespace

TEST_CASE("a checkpoint store mirrored to S3: every checkpoint uploaded, keep_last applied in the bucket",
          "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::TempDir tmp;
  const yolotrain::remote::S3Location where = yolotrain::remote::S3Location::parse("s3://runs/exp1");
  yolotrain::remote::S3Client client(settings_for(server.endpoint(), server), "runs");
  auto mirror = std::make_shared<yolotrain::remote::RemoteMirror>(client, where, tmp.path());
  lc::CheckpointStore store({tmp / "weights", 2, "", "last", {}});
  yolotrain::remote::mirror_checkpoints(store, mirror);
  for (int step = 1; step <= 4; ++step) {
    store.save(make_checkpoint(step));
    REQUIRE(mirror->finish(30).complete);  // each confirmed before the next: rotation sees them all
  }
  const fs::path best = store.save_pinned(make_checkpoint(3), "best");
  const yolotrain::remote::RemoteFinish done = mirror->finish(30);
  CHECK(done.complete);
  CHECK(done.last_uploaded_step == 4);
  CHECK(steps_in(client, where) == std::vector<std::int64_t>{4, 3});
  CHECK(client.get_object("exp1/weights/last-000000000004.ytckpt") == yt::slurp(store.checkpoints().front()));
  CHECK(client.get_object("exp1/weights/best.ytckpt") == yt::slurp(best));
  const lc::RemoteUploadStatus status = mirror->status();
  CHECK(status.last_uploaded_step == 4);
  CHECK(status.pending == 0);
  CHECK(status.last_error.empty());
  CHECK(status.url == "s3://runs/exp1");
}

TEST_CASE("a newer checkpoint supersedes one still waiting for upload", "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::FaultProxy proxy(server);
  yt::TempDir tmp;
  const yolotrain::remote::S3Location where = yolotrain::remote::S3Location::parse("s3://runs/p");
  yolotrain::remote::S3Client client(settings_for(proxy.endpoint(), server), "runs");
  yolotrain::remote::RemoteMirror mirror(client, where, tmp.path(), quick_retries());
  lc::CheckpointStore store({tmp / "weights", 10, "", "last", {}});
  proxy.set_delay_ms(700);
  mirror.upload_checkpoint(store.save(make_checkpoint(1)), 1);
  std::this_thread::sleep_for(200ms);  // step 1 is in flight now
  for (int step = 2; step <= 5; ++step) mirror.upload_checkpoint(store.save(make_checkpoint(step)), step);
  CHECK(mirror.status().pending == 2);  // step 1 in flight, step 5 waiting
  REQUIRE(mirror.finish(60).complete);
  proxy.reset();
  CHECK(steps_in(client, where) == std::vector<std::int64_t>{5, 1});
}

TEST_CASE("5xx answers are retried with backoff until the upload is confirmed", "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::FaultProxy proxy(server);
  yt::TempDir tmp;
  std::ofstream(tmp / "results.csv") << "epoch,train/box_loss\n1,1.5\n";
  yolotrain::remote::S3Client client(settings_for(proxy.endpoint(), server), "runs");
  yolotrain::remote::RemoteMirror mirror(client, yolotrain::remote::S3Location::parse("s3://runs/p"), tmp.path(),
                                         quick_retries());
  std::vector<lc::RemoteUploadStatus> seen;
  std::mutex seen_mutex;
  mirror.set_listener([&](const lc::RemoteUploadStatus& s) {
    std::lock_guard<std::mutex> lock(seen_mutex);
    seen.push_back(s);
  });
  proxy.set_5xx(3);
  mirror.upload_file(tmp / "results.csv");
  const yolotrain::remote::RemoteFinish done = mirror.finish(30);
  CHECK(done.complete);
  CHECK(mirror.status().retries == 3);
  CHECK(client.get_object("p/results.csv") == yt::slurp(tmp / "results.csv"));
  std::lock_guard<std::mutex> lock(seen_mutex);
  REQUIRE(seen.size() >= 4);
  CHECK_THAT(seen.front().last_error, Catch::Contains("503") && Catch::Contains("SlowDown"));
  CHECK(seen.back().last_error.empty());
}

TEST_CASE("with the server gone the upload waits and retries, restarted it catches up, and finish() is bounded",
          "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::TempDir tmp;
  const yolotrain::remote::S3Location where = yolotrain::remote::S3Location::parse("s3://runs/p");
  yolotrain::remote::S3Client client(settings_for(server.endpoint(), server), "runs");
  yolotrain::remote::RemoteMirror mirror(client, where, tmp.path(), quick_retries());
  lc::CheckpointStore store({tmp / "weights", 2, "", "last", {}});
  server.kill();
  const fs::path first = store.save(make_checkpoint(7));
  mirror.upload_checkpoint(first, 7);
  const auto t0 = std::chrono::steady_clock::now();
  const yolotrain::remote::RemoteFinish timed_out = mirror.finish(1.5);
  CHECK(std::chrono::steady_clock::now() - t0 < 6s);
  CHECK_FALSE(timed_out.complete);
  CHECK(timed_out.not_uploaded == std::vector<std::string>{"weights/last-000000000007.ytckpt"});
  CHECK_THAT(timed_out.last_error, Catch::Contains("connect") || Catch::Contains("Connection"));
  CHECK(timed_out.last_uploaded_step == -1);

  mirror.upload_checkpoint(store.save(make_checkpoint(8)), 8);
  std::this_thread::sleep_for(1s);  // failing and retrying meanwhile
  CHECK(mirror.status().retries >= 1);
  server.restart();
  CHECK(mirror.finish(30).complete);
  CHECK(steps_in(client, where) == std::vector<std::int64_t>{8});
}

TEST_CASE("a very slow server: finish() returns after its timeout and cancels the transfer", "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::FaultProxy proxy(server);
  yt::TempDir tmp;
  lc::CheckpointStore store({tmp / "weights", 2, "", "last", {}});
  const auto t0 = std::chrono::steady_clock::now();
  {
    yolotrain::remote::RemoteMirror mirror(yolotrain::remote::S3Client(settings_for(proxy.endpoint(), server), "runs"),
                            yolotrain::remote::S3Location::parse("s3://runs/p"), tmp.path());
    proxy.set_delay_ms(20000);
    mirror.upload_checkpoint(store.save(make_checkpoint(1)), 1);
    const yolotrain::remote::RemoteFinish f = mirror.finish(1);
    CHECK_FALSE(f.complete);
    CHECK(f.waited_s >= 0.9);
  }  // the destructor does not wait for the slow server either
  CHECK(std::chrono::steady_clock::now() - t0 < 8s);
}

TEST_CASE("a damaged checkpoint is never uploaded and a damaged remote one is skipped on download", "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::TempDir tmp;
  const yolotrain::remote::S3Location where = yolotrain::remote::S3Location::parse("s3://runs/p");
  yolotrain::remote::S3Client client(settings_for(server.endpoint(), server), "runs");
  lc::CheckpointStore store({tmp / "weights", 5, "", "last", {}});
  const fs::path good = store.save(make_checkpoint(3));
  const fs::path newer = store.save(make_checkpoint(4));
  {
    yolotrain::remote::RemoteMirror mirror(client, where, tmp.path());
    std::string bytes = yt::slurp(newer);
    bytes[bytes.size() - 10] ^= 0x40;
    std::ofstream(tmp / "weights" / "best.ytckpt", std::ios::binary) << bytes;
    mirror.upload_file(tmp / "weights" / "best.ytckpt");
    CHECK(mirror.finish(30).complete);  // nothing left to do: dropped, not retried
    CHECK_THAT(mirror.status().last_error, Catch::Contains("best.ytckpt") && Catch::Contains("checksum mismatch"));
    CHECK(client.list_objects("p/weights/best").empty());
    mirror.upload_checkpoint(good, 3);
    CHECK(mirror.finish(30).complete);
    // The newest remote object damaged (as by a faulty copy): the download takes the one before.
    client.put_object("p/weights/last-000000000004.ytckpt", bytes);
  }
  yt::TempDir elsewhere;
  const yolotrain::remote::RemoteFetch fetched =
      yolotrain::remote::fetch_latest_checkpoint(client, where, elsewhere.path(), "weights/last");
  REQUIRE(fetched.path);
  CHECK(fetched.step == 3);
  CHECK(*fetched.path == elsewhere / "weights" / "last-000000000003.ytckpt");
  CHECK(yt::slurp(*fetched.path) == yt::slurp(good));
  REQUIRE(fetched.skipped.size() == 1);
  CHECK(fetched.skipped[0].path == "s3://runs/p/weights/last-000000000004.ytckpt");
  CHECK_THAT(fetched.skipped[0].reason, Catch::Contains("checksum mismatch"));
  CHECK_FALSE(yolotrain::remote::fetch_latest_checkpoint(client, where, elsewhere.path(), "weights/last", 3).path);
  CHECK_FALSE(yolotrain::remote::fetch_file(client, where, elsewhere.path(), "weights/best.ytckpt"));
}

TEST_CASE("listings page through continuation tokens", "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yolotrain::remote::S3Client client(settings_for(server.endpoint(), server), "runs");
  for (int i = 0; i < 5; ++i) client.put_object("p/o" + std::to_string(i), std::string(10, char('a' + i)));
  client.put_object("q/other", "x");
  const auto all = client.list_objects("p/", 2);
  REQUIRE(all.size() == 5);
  CHECK(all.front().key == "p/o0");
  CHECK(all.back().key == "p/o4");
  CHECK(all.back().size == 10);
  client.delete_object("p/o0");
  client.delete_object("p/missing");  // absent is not an error
  CHECK(client.list_objects("p/").size() == 4);
  CHECK_THROWS_WITH(client.get_object("p/o0"), Catch::Contains("NoSuchKey"));
}

TEST_CASE("an object larger than a part goes up in parts: whole for another client, a failed part sent again alone, "
          "a failed upload leaving no object",
          "[remote][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::FaultProxy proxy(server);
  yt::TempDir tmp;
  yolotrain::remote::S3Settings settings = settings_for(proxy.endpoint(), server);
  settings.multipart_part_size = std::size_t{5} << 20;  // S3's smallest part
  yolotrain::remote::S3Client client(settings, "runs");
  std::string data((std::size_t{12} << 20) + 123, '\0');  // 3 parts: 5 MiB, 5 MiB, 2 MiB + 123 bytes
  std::uint32_t x = 12345;
  for (auto& c : data) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);

  client.put_object("big/one.bin", data);
  CHECK(proxy.stat("POST") == 2);  // create, complete
  CHECK(proxy.stat("PUT") == 3);   // a part each
  CHECK(client.get_object("big/one.bin") == data);
  if (yt::has_aws_cli()) {  // an independent client reads the same bytes
    REQUIRE(
        yt::aws_cli(server, {"s3", "cp", "--no-progress", "s3://runs/big/one.bin", (tmp / "one.bin").string()}).code ==
        0);
    CHECK(yt::slurp(tmp / "one.bin") == data);
  }

  // Two 503s on parts: the part is sent again, the upload is not begun again.
  proxy.reset_stats();
  proxy.set_5xx(2, 503, {"PUT"});
  client.put_object("big/two.bin", data);
  CHECK(proxy.stat("injected_5xx") == 2);
  CHECK(proxy.stat("POST") == 2);
  CHECK(proxy.stat("PUT") == 5);
  CHECK(client.get_object("big/two.bin") == data);

  // A part that keeps failing: the upload fails (transient: the mirror retries it later), is
  // aborted, and no object appears.
  proxy.reset_stats();
  proxy.set_5xx(3, 503, {"PUT"});
  try {
    client.put_object("big/three.bin", data);
    FAIL("the upload should have failed");
  } catch (const yolotrain::remote::S3Error& e) {
    CHECK(e.transient);
    CHECK_THAT(e.what(), Catch::Contains("part 1 of 3") && Catch::Contains("s3://runs/big/three.bin"));
  }
  CHECK(proxy.stat("DELETE") == 1);  // the abort
  CHECK(proxy.stat("POST") == 1);    // created, never completed
  CHECK_THROWS_AS(client.get_object("big/three.bin"), yolotrain::remote::S3Error);
  CHECK(client.list_objects("big/").size() == 2);
}
