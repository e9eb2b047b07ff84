// RunLog: the run's words on the terminal and in train.log.
#include "run_log.hpp"

#include "catch.hpp"

#include "test_support.hpp"

namespace yt = yolotrain::test;
using yolotrain::engine::detail::RunLog;

TEST_CASE("train.log holds what was said before it opened, then everything said and the epochs' last progress lines",
          "[engine]") {
  yt::TempDir tmp;
  RunLog log;
  log.say("remote: mirroring to s3://bucket/run");  // said before the run folder is known
  log.log_only("a warning for the file only");
  log.open(tmp / "train.log");
  log.progress("1/2 50%", false);  // a progress line in flight: not in the file
  log.progress("1/2 100%", true);  // the epoch's last
  log.say("epoch 1/2: P 0.5");
  const std::string first =
      "remote: mirroring to s3://bucket/run\na warning for the file only\n1/2 100%\nepoch 1/2: P 0.5\n";
  CHECK(yt::slurp(tmp / "train.log") == first);
  RunLog resumed;  // a resumed run appends
  resumed.open(tmp / "train.log");
  resumed.say("resumed from step 6");
  CHECK(yt::slurp(tmp / "train.log") == first + "resumed from step 6\n");
}

TEST_CASE("a rank that does not speak writes no train.log", "[engine]") {
  yt::TempDir tmp;
  RunLog log;
  log.set_speaks(false);
  log.say("rank 1 says nothing");
  log.open(tmp / "train.log");
  log.say("nor here");
  CHECK_FALSE(std::filesystem::exists(tmp / "train.log"));
}
