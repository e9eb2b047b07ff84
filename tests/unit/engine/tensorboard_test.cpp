// TensorBoard's framing (CRC-32C, TFRecord) and the logger's resume rule; the integration test
// reads a real run's file back with an independent Python reader.
#include <torch/torch.h>

#include "tensorboard/event_file.hpp"
#include "yolotrain/engine/tensorboard_logger.hpp"

#include "catch.hpp"

#include "test_support.hpp"

namespace fs = std::filesystem;
namespace en = yolotrain::engine;
using namespace yolotrain::engine::detail;

TEST_CASE("CRC-32C and TFRecord framing as TensorFlow writes them", "[engine][tensorboard]") {
  CHECK(crc32c("123456789") == 0xe3069283u);  // the standard check value of CRC-32C
  CHECK(crc32c("") == 0u);
  const std::string a = tfrecord("hello"), b = tfrecord(std::string(300, 'x'));
  CHECK(a.size() == 8 + 4 + 5 + 4);
  CHECK(read_tfrecords(a + b) == std::vector<std::string>{"hello", std::string(300, 'x')});
  std::string torn = a + b.substr(0, b.size() - 3);  // a process killed while appending
  CHECK(read_tfrecords(torn) == std::vector<std::string>{"hello"});
  std::string damaged = a + b;
  damaged[a.size() + 20] ^= 1;
  CHECK(read_tfrecords(damaged) == std::vector<std::string>{"hello"});
}

TEST_CASE("a resumed logger drops what was written after the resumed position", "[engine][tensorboard]") {
  yolotrain::test::TempDir dir;
  fs::path file;
  {
    en::TensorBoardLogger tb(dir.path());
    file = tb.path();
    CHECK_THAT(file.filename().string(), Catch::StartsWith("events.out.tfevents."));
    for (int step = 1; step <= 6; ++step) tb.add_scalar("step/train/box_loss", step, step);
    for (int epoch = 1; epoch <= 3; ++epoch) tb.add_scalar("metrics/mAP50(B)", 0.1 * epoch, epoch);
  }
  const std::size_t before = read_tfrecords(yolotrain::test::slurp(file)).size();
  CHECK(before == 1 + 6 + 3);  // file_version first
  {
    en::TensorBoardLogger tb(dir.path(), /*step=*/4, /*epochs_done=*/2);
    CHECK(tb.path() == file);  // the same stream continues
  }
  CHECK(read_tfrecords(yolotrain::test::slurp(file)).size() == 1 + 4 + 2);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path()))
    files += e.path().filename().string().rfind("events.", 0) == 0;
  CHECK(files == 1);
}
