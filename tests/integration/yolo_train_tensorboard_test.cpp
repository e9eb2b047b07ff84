// tensorboard=true: a real run stopped by SIGTERM and resumed, its event file read back by a
// reader that shares no code with the writer (tests/tensorboard/read_events.py: Debian's python3
// with python3-crc32c, the protobuf wire format decoded by hand).
#include <ATen/ATen.h>

#include "catch.hpp"
#include <nlohmann/json.hpp>
#include <signal.h>

#include <cmath>
#include <sstream>

#include "results_csv.hpp"
#include "test_support.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

fs::path event_file(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) found.push_back(e.path());
  }
  REQUIRE(found.size() == 1);
  return found.front();
}

}  // namespace

TEST_CASE("tensorboard=true: the event file, read back independently, holds results.csv and the run's pictures, "
          "with no duplicate step after a resume",
          "[integration][tensorboard]") {
  if (std::system("/usr/bin/python3 -c 'import crc32c' > /dev/null 2>&1") != 0) {
    WARN("skipped: /usr/bin/python3 lacks python3-crc32c (apt-get install python3-crc32c)");
    return;
  }
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child =
      yt::spawn(yt::train_args(tmp.path(), {"tensorboard=true", "epochs=3", "plots=true"}), tmp / "out1.txt");
  REQUIRE(yt::wait_for_step(dir, 6));  // inside epoch 2
  kill(child.pid, SIGTERM);
  REQUIRE(yt::wait_exit(child, 120s) == 143);
  const yt::Finished resumed =
      yt::run_to_end(yt::train_args(tmp.path(), {"tensorboard=true", "epochs=3", "plots=true", "resume=true"}),
                     tmp / "out2.txt");
  INFO(resumed.output);
  REQUIRE(resumed.code == 0);

  const yt::Finished read = yt::run_to_end(
      {"/usr/bin/python3", YOLOTRAIN_SOURCE_DIR "/tests/tensorboard/read_events.py", event_file(dir).string()},
      tmp / "events.json");
  INFO(read.output);
  REQUIRE(read.code == 0);  // every CRC checks, every record decodes
  const auto events = nlohmann::json::parse(yt::slurp(tmp / "events.json"));
  CHECK(events["file_version"] == "brain.Event:2");
  // Every tag's steps strictly increase: nothing repeated or going back across the resume.
  for (const auto& [tag, points] : events["scalars"].items()) {
    CAPTURE(tag);
    for (std::size_t i = 1; i < points.size(); ++i) CHECK(points[i][0].get<long>() > points[i - 1][0].get<long>());
  }
  // Per step: every one of the 12 steps once.
  const auto& box = events["scalars"]["step/train/box_loss"];
  REQUIRE(box.size() == 12);
  CHECK(box.front()[0] == 1);
  CHECK(box.back()[0] == 12);
  CHECK(events["scalars"]["step/lr/pg0"].size() == 12);
  // The running loss at an epoch's last step is that epoch's train/box_loss (4 batches an epoch).
  CHECK(box[3][1] == events["scalars"]["train/box_loss"][0][1]);
  CHECK(box[7][1] == events["scalars"]["train/box_loss"][1][1]);
  // Per epoch: the tags and values of results.csv.
  const yt::Csv csv = yt::read_results(dir / "results.csv");
  std::size_t compared = 0;
  for (const std::string& name : csv.names) {
    if (name == "epoch" || name == "time") continue;
    CAPTURE(name);
    REQUIRE(events["scalars"].contains(name));
    const auto& points = events["scalars"][name];
    REQUIRE(points.size() == csv.rows.size());
    for (std::size_t e = 0; e < csv.rows.size(); ++e) {
      const double value = csv.at(e, name);
      CHECK(points[e][0] == static_cast<long>(e + 1));
      CHECK(std::abs(points[e][1].get<double>() - value) <= 1e-4 * std::max(1.0, std::abs(value)));
    }
    ++compared;
  }
  CHECK(compared == 13);
  // The run's pictures, decodable, at their own size.
  for (const char* tag : {"images/results.png", "images/val_batch0_pred.jpg", "images/PR_curve.png"}) {
    CAPTURE(tag);
    REQUIRE(events["images"].contains(tag));
    const auto& image = events["images"][tag][0];
    CHECK(image["width"] == image["decoded_width"]);
    CHECK(image["height"] == image["decoded_height"]);
    CHECK(image["width"].get<int>() > 100);
  }
}
