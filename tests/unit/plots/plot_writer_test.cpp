#include "yolotrain/plots/plot_writer.hpp"

#include "catch.hpp"

#include <stdexcept>

#include "test_support.hpp"
#include "yolotrain/data/image.hpp"

namespace fs = std::filesystem;

TEST_CASE("PlotWriter writes off the caller's thread and turns failures into warnings", "[plots]") {
  yolotrain::test::TempDir tmp;
  yolotrain::plots::PlotWriter writer;
  writer.submit(tmp / "a.jpg", [] { return yolotrain::data::Image(20, 30, 128); });
  writer.submit(tmp / "b.png", [] { return yolotrain::data::Image(10, 10, 7); });
  writer.submit(tmp / "broken.jpg", []() -> yolotrain::data::Image { throw std::runtime_error("no font"); });
  fs::create_directories(tmp / "dir.jpg");  // a folder where the picture should go
  writer.submit(tmp / "dir.jpg", [] { return yolotrain::data::Image(4, 4, 0); });
  writer.wait();
  const auto a = yolotrain::data::decode_image(tmp / "a.jpg");
  CHECK(a.width == 30);
  CHECK(a.height == 20);
  CHECK(yolotrain::data::decode_image(tmp / "b.png").pixels == yolotrain::data::Image(10, 10, 7).pixels);
  const auto warnings = writer.take_warnings();
  REQUIRE(warnings.size() == 2);
  CHECK_THAT(warnings[0], Catch::Contains("broken.jpg not written: no font"));
  CHECK_THAT(warnings[1], Catch::Contains("dir.jpg not written"));
  CHECK_FALSE(fs::exists(tmp / "broken.jpg"));
  CHECK(writer.take_warnings().empty());
}

TEST_CASE("PlotWriter's destructor writes what is still queued", "[plots]") {
  yolotrain::test::TempDir tmp;
  {
    yolotrain::plots::PlotWriter writer;
    for (int i = 0; i < 5; ++i) {
      writer.submit(tmp / ("p" + std::to_string(i) + ".jpg"), [] { return yolotrain::data::Image(8, 8, 50); });
    }
  }
  for (int i = 0; i < 5; ++i) CHECK(fs::exists(tmp / ("p" + std::to_string(i) + ".jpg")));
}

TEST_CASE("PlotWriter writes texts in order with the pictures, a failure a warning", "[plots]") {
  yolotrain::test::TempDir tmp;
  yolotrain::plots::PlotWriter writer;
  writer.submit_text(tmp / "numbers.csv", "a,b\n1,2\n");
  fs::create_directories(tmp / "taken.csv");
  writer.submit_text(tmp / "taken.csv", "x");
  writer.submit_text(tmp / "taken.csv", "y");  // failing again: still one warning
  writer.wait();
  CHECK(yolotrain::test::slurp(tmp / "numbers.csv") == "a,b\n1,2\n");
  const auto warnings = writer.take_warnings();
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("taken.csv not written"));
}
