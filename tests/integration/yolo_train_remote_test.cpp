// yolo_train with remote=: a real S3 API server (s3rver) started by the tests, real signals, a
// second client (Debian's awscli) to cross-check what reached the bucket.
#include <ATen/ATen.h>

#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/remote/remote_mirror.hpp"

#include "catch.hpp"
#include <nlohmann/json.hpp>
#include <signal.h>

#include <fstream>

#include "s3_server.hpp"
#include "test_support.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
namespace lc = yolotrain::lifecycle;
using namespace std::chrono_literals;

namespace {

#define REQUIRE_S3_SERVER()                           \
  if (const auto why = yt::S3Server::unavailable()) { \
    WARN("S3 tests skipped: " << *why);               \
    return;                                           \
  }

// The AWS environment yolo_train reads, pointed at `endpoint`.
std::map<std::string, std::optional<std::string>> aws_env(const std::string& endpoint,
                                                          const std::string& key = yt::S3Server::access_key(),
                                                          const std::string& secret = yt::S3Server::secret_key()) {
  return {{"AWS_ACCESS_KEY_ID", key},        {"AWS_SECRET_ACCESS_KEY", secret},
          {"AWS_SESSION_TOKEN", std::nullopt}, {"AWS_REGION", std::string("us-east-1")},
          {"AWS_ENDPOINT_URL", endpoint},   {"AWS_ENDPOINT_URL_S3", std::nullopt},
          {"AWS_PROFILE", std::nullopt},     {"AWS_S3_ADDRESSING_STYLE", std::nullopt}};
}

yolotrain::remote::S3Client client_of(const yt::S3Server& server) {
  yolotrain::remote::S3Settings s;
  s.endpoint = server.endpoint();
  s.path_style = true;
  s.access_key_id = yt::S3Server::access_key();
  s.secret_access_key = yt::S3Server::secret_key();
  return yolotrain::remote::S3Client(s, server.bucket());
}

std::vector<std::int64_t> remote_steps(const yt::S3Server& server, const std::string& prefix) {
  std::vector<std::int64_t> out;
  for (const auto& c : yolotrain::remote::list_remote_checkpoints(
           client_of(server), yolotrain::remote::S3Location::parse("s3://runs/" + prefix), "weights/last")) {
    out.push_back(c.step);
  }
  return out;
}

// Runs until step `step`, then SIGTERM; returns the output.
std::string train_and_sigterm(const std::vector<std::string>& args, const fs::path& run_dir, const fs::path& out,
                              std::int64_t step = 3) {
  yt::Child child = yt::spawn(args, out);
  REQUIRE(yt::wait_for_step(run_dir, step));
  kill(child.pid, SIGTERM);
  const auto code = yt::wait_exit(child, 120s);
  const std::string text = yt::slurp(out);
  INFO(text);
  CHECK(code == 143);
  return text;
}

}  // namespace

TEST_CASE("remote=: SIGTERM mid-epoch, the run folder deleted, a resume from the bucket ends byte-identical",
          "[integration][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::ScopedEnv env(aws_env(server.endpoint()));
  yt::TempDir tmp;
  const std::string out1 = train_and_sigterm(yt::train_args(tmp / "m1", {"remote=s3://runs/exp"}), tmp / "m1/run",
                                             tmp / "out1.txt");
  CHECK_THAT(out1, Catch::Contains("remote: mirroring") && Catch::Contains("remote: every upload confirmed"));
  lc::CheckpointStore local({tmp / "m1/run/weights", 2, "", "last", {}});
  const fs::path newest = local.checkpoints().front();
  // train.log holds the whole story, the line said before the run folder was known first.
  CHECK_THAT(yt::slurp(tmp / "m1/run/train.log"),
             Catch::StartsWith("remote: mirroring " + (tmp / "m1/run").string() + " to s3://runs/exp") &&
                 Catch::Contains("remote: every upload confirmed"));

  // An independent client sees the run folder's files and downloads a checkpoint that verifies.
  const auto listing = yt::aws_cli(server, {"s3", "ls", "--recursive", "s3://runs/exp/"});
  INFO(listing.output);
  REQUIRE(listing.code == 0);
  for (const char* name : {"exp/args.yaml", "exp/status.json", "exp/weights/"}) {
    CHECK_THAT(listing.output, Catch::Contains(name));
  }
  CHECK_THAT(listing.output, Catch::Contains("exp/weights/" + newest.filename().string()));
  const auto got = yt::aws_cli(server, {"s3", "cp", "--no-progress", "s3://runs/exp/weights/" +
                                        newest.filename().string(), (tmp / "by-aws.ytckpt").string()});
  INFO(got.output);
  REQUIRE(got.code == 0);
  CHECK(yt::slurp(tmp / "by-aws.ytckpt") == yt::slurp(newest));
  CHECK_NOTHROW(lc::CheckpointStore::load(tmp / "by-aws.ytckpt"));
  const auto status = nlohmann::json::parse(yt::slurp(tmp / "m1/run/status.json"));
  CHECK(status["remote"]["url"] == "s3://runs/exp");
  CHECK(status["remote"]["last_uploaded_step"] == lc::CheckpointStore::read_meta(newest).step);
  CHECK(status["remote"]["pending"] == 0);

  // A damaged newer object in the bucket (a faulty copy) is skipped on resume.
  std::string damaged = yt::slurp(newest);
  damaged[damaged.size() / 2] ^= 0x21;
  std::ofstream(tmp / "damaged.ytckpt", std::ios::binary) << damaged;
  REQUIRE(yt::aws_cli(server, {"s3", "cp", "--no-progress", (tmp / "damaged.ytckpt").string(),
                               "s3://runs/exp/weights/last-000000000999.ytckpt"}).code == 0);

  yt::remove_tree(tmp / "m1");  // the machine is gone
  const yt::Finished resumed =
      yt::run_to_end(yt::train_args(tmp / "m2", {"remote=s3://runs/exp", "resume=true"}), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resume: skipping s3://runs/exp/weights/last-000000000999.ytckpt") &&
                                 Catch::Contains("checksum mismatch"));
  CHECK_THAT(resumed.output, Catch::Contains("resume: downloaded s3://runs/exp/weights/" + newest.filename().string()));
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step"));
  CHECK(yt::weights_of(tmp / "m2/run") == yt::baseline());
  CHECK(yt::slurp(tmp / "m2/run/results.csv") == client_of(server).get_object("exp/results.csv"));
  // args.yaml names the folder the run now trains in, not the gone machine's.
  const std::string args = yt::slurp(tmp / "m2/run/args.yaml");
  CHECK_THAT(args, Catch::Contains((tmp / "m2").string()) && !Catch::Contains((tmp / "m1").string()));
}

TEST_CASE("a checkpoint put in the bucket by another client is resumed by resume=s3://", "[integration][s3]") {
  REQUIRE_S3_SERVER();
  if (!yt::has_aws_cli()) {
    WARN("skipped: no aws CLI (apt-get install awscli)");
    return;
  }
  yt::S3Server server("runs");
  yt::ScopedEnv env(aws_env(server.endpoint()));
  yt::TempDir tmp;
  train_and_sigterm(yt::train_args(tmp / "local"), tmp / "local/run", tmp / "out1.txt");
  const fs::path newest = lc::CheckpointStore({tmp / "local/run/weights", 2, "", "last", {}}).checkpoints().front();
  const auto put = yt::aws_cli(server, {"s3", "cp", "--no-progress", newest.string(),
                                        "s3://runs/by-aws/weights/" + newest.filename().string()});
  INFO(put.output);
  REQUIRE(put.code == 0);
  const yt::Finished resumed =
      yt::run_to_end(yt::train_args(tmp / "other", {"resume=s3://runs/by-aws"}), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step"));
  CHECK(yt::weights_of(tmp / "other/run") == yt::baseline());
  // resume=s3:// keeps mirroring there: the finished run's last checkpoint is in the bucket.
  const auto steps = remote_steps(server, "by-aws");
  REQUIRE_FALSE(steps.empty());
  CHECK(steps.front() == 8);
}

TEST_CASE("remote=: a bucket that cannot be reached, or refuses the key, exits 2 before training, no secret printed",
          "[integration][s3]") {
  REQUIRE_S3_SERVER();
  yt::TempDir tmp;
  SECTION("no server") {
    yt::ScopedEnv env(aws_env("http://127.0.0.1:" + std::to_string(yt::free_port())));
    const yt::Finished f = yt::run_to_end(yt::train_args(tmp.path(), {"remote=s3://runs/exp"}), tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains("remote=s3://runs/exp") && Catch::Contains("s3://runs/exp/") &&
                             Catch::Contains("connect to server"));  // curl 7.88: Couldn't, 8.14: Could not
    CHECK_THAT(f.output, !Catch::Contains("training 2 epochs"));
  }
  SECTION("an unknown access key") {
    yt::S3Server server("runs");
    const std::string secret = "this-secret-must-not-be-printed";
    yt::ScopedEnv env(aws_env(server.endpoint(), "NOSUCHKEY", secret));
    const yt::Finished f = yt::run_to_end(yt::train_args(tmp.path(), {"remote=s3://runs/exp"}), tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains("InvalidAccessKeyId") && Catch::Contains("check the credentials from"));
    CHECK_THAT(f.output, !Catch::Contains(secret));
    for (const auto& entry : fs::recursive_directory_iterator(tmp.path())) {
      if (entry.is_regular_file()) CHECK_THAT(yt::slurp(entry.path()), !Catch::Contains(secret));
    }
  }
  SECTION("a fresh run into a prefix that holds another run") {
    yt::S3Server server("runs");
    yt::ScopedEnv env(aws_env(server.endpoint()));
    client_of(server).put_object("exp/weights/last-000000000004.ytckpt", "x");
    const yt::Finished f = yt::run_to_end(yt::train_args(tmp.path(), {"remote=s3://runs/exp"}), tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains("already holds checkpoints of a run (newest: step 4)") &&
                             Catch::Contains("resume=true"));
  }
}

TEST_CASE("remote=: a very slow server while SIGTERM arrives: a bounded wait, said, the local checkpoint intact",
          "[integration][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::FaultProxy proxy(server);
  yt::ScopedEnv env(aws_env(proxy.endpoint()));
  yt::TempDir tmp;
  yt::Child child =
      yt::spawn(yt::train_args(tmp.path(), {"remote=s3://runs/exp", "remote_timeout=2"}), tmp / "out.txt");
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  proxy.set_delay_ms(120000);
  const auto t0 = std::chrono::steady_clock::now();
  kill(child.pid, SIGTERM);
  const auto code = yt::wait_exit(child, 60s);
  const auto took = std::chrono::steady_clock::now() - t0;
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  CHECK(code == 143);
  CHECK(took < 20s);
  CHECK_THAT(out, Catch::Contains("remote: WARNING the upload did not finish within remote_timeout=2.0 s") &&
                      Catch::Contains("the local checkpoint"));
  CHECK_THAT(yt::slurp(tmp / "run/train.log"), Catch::Contains("remote: WARNING the upload did not finish"));
  const auto newest = lc::CheckpointStore({tmp / "run/weights", 2, "", "last", {}}).checkpoints();
  REQUIRE_FALSE(newest.empty());
  CHECK_NOTHROW(lc::CheckpointStore::load(newest.front()));
}

TEST_CASE("remote=: the server killed mid-run and restarted: training goes on and the uploads catch up",
          "[integration][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::FaultProxy proxy(server);  // 5xx answers on the way, too
  yt::ScopedEnv env(aws_env(proxy.endpoint()));
  yt::TempDir tmp;
  proxy.set_5xx(1);  // at start: retried
  yt::Child child = yt::spawn(yt::train_args(tmp.path(), {"remote=s3://runs/exp", "save_interval=0.01"}),
                              tmp / "out.txt");
  REQUIRE(yt::wait_for_step(tmp / "run", 2));
  proxy.set_5xx(2);
  std::this_thread::sleep_for(300ms);
  server.kill();
  // Uploads meet the dead server (the proxy answers 502) and status.json says so.
  REQUIRE(yt::wait_until([&] { return proxy.stat("upstream_errors") >= 1; }, 60s));
  REQUIRE(yt::wait_until(
      [&] {
        const auto s = yt::status_of(tmp / "run");
        return s.contains("remote") && !s["remote"]["last_error"].is_null();
      },
      60s));
  server.restart();
  const auto code = yt::wait_exit(child, 240s);
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("remote: every upload confirmed"));
  const auto steps = remote_steps(server, "exp");  // keep_last=2; waiting ones were superseded
  REQUIRE_FALSE(steps.empty());
  CHECK(steps.front() == 8);
  CHECK(steps.size() <= 2);
  CHECK(client_of(server).get_object("exp/results.csv") == yt::slurp(tmp / "run/results.csv"));
  CHECK(proxy.stat("injected_5xx") == 3);  // every one answered, and the run went on
}

TEST_CASE("a resumed run keeps mirroring where its checkpoint says, and remote=off stops it", "[integration][s3]") {
  REQUIRE_S3_SERVER();
  yt::S3Server server("runs");
  yt::ScopedEnv env(aws_env(server.endpoint()));
  yt::TempDir tmp;
  train_and_sigterm(yt::train_args(tmp.path(), {"remote=s3://runs/kept", "epochs=3"}), tmp / "run", tmp / "out1.txt");
  const std::string second = train_and_sigterm(yt::train_args(tmp.path(), {"resume=true", "epochs=3"}), tmp / "run",
                                               tmp / "out2.txt", 7);
  CHECK_THAT(second, Catch::Contains("remote: mirroring") && Catch::Contains("remote: every upload confirmed"));
  const auto after_second = remote_steps(server, "kept");
  REQUIRE_FALSE(after_second.empty());
  CHECK(after_second.front() == yt::status_of(tmp / "run")["last_checkpoint"]["step"].get<std::int64_t>());
  const yt::Finished third = yt::run_to_end(yt::train_args(tmp.path(), {"resume=true", "epochs=3", "remote=off"}),
                                            tmp / "out3.txt");
  INFO(third.output);
  CHECK(third.code == 0);
  CHECK_THAT(third.output, !Catch::Contains("remote:"));
  CHECK(remote_steps(server, "kept") == after_second);
  CHECK_THAT(yt::slurp(tmp / "run/args.yaml"), Catch::Contains("remote: \"off\""));
}
