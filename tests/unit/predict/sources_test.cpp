#include "yolotrain/predict/sources.hpp"

#include "catch.hpp"

#include <fstream>

#include "test_support.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using yolotrain::predict::expand_source;

TEST_CASE("expand_source reads files, folders, globs and .txt lists as Ultralytics does", "[predict]") {
  yolotrain::test::TempDir tmp;
  fs::create_directories(tmp / "imgs");
  for (const char* f : {"b.jpg", "a.PNG", "c.mp4", "notes.md", "d.webp"}) std::ofstream(tmp / "imgs" / f) << "x";
  const auto names = [](const std::vector<fs::path>& v) {
    std::vector<std::string> out;
    for (const auto& p : v) out.push_back(p.filename().string());
    return out;
  };
  const auto folder = expand_source((tmp / "imgs").string());
  CHECK(names(folder.images) == std::vector<std::string>{"a.PNG", "b.jpg", "d.webp"});  // sorted, by extension
  CHECK(names(folder.videos) == std::vector<std::string>{"c.mp4"});
  CHECK(folder.images[0].is_absolute());
  CHECK(names(expand_source((tmp / "imgs" / "*.jpg").string()).images) == std::vector<std::string>{"b.jpg"});
  CHECK(names(expand_source((tmp / "imgs" / "b.jpg").string()).images) == std::vector<std::string>{"b.jpg"});
  std::ofstream(tmp / "list.txt") << "imgs/b.jpg\n" << (tmp / "imgs" / "a.PNG").string() << "\n\n";
  CHECK(names(expand_source((tmp / "list.txt").string()).images) == std::vector<std::string>{"a.PNG", "b.jpg"});
  CHECK_THROWS_WITH(expand_source((tmp / "nope.jpg").string()), Catch::Contains("nope.jpg does not exist"));
  fs::create_directories(tmp / "empty");
  CHECK_THROWS_WITH(expand_source((tmp / "empty").string()), Catch::Contains("no images or videos found"));
  CHECK_THROWS_AS(expand_source(""), yolotrain::Error);
}
