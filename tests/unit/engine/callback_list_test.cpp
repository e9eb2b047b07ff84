// CallbackList: the trainer's events hold any number of listeners (Ultralytics' add_callback).
#include <ATen/ATen.h>

#include "yolotrain/engine/callback_list.hpp"

#include "catch.hpp"

#include <stdexcept>
#include <string>
#include <vector>

TEST_CASE("a callback list calls its listeners in the order added", "[engine]") {
  std::vector<std::string> seen;
  yolotrain::engine::CallbackList<int> list = [&](int v) { seen.push_back("first " + std::to_string(v)); };
  list.add([&](int v) { seen.push_back("second " + std::to_string(v)); });
  list.add(nullptr);  // an empty listener adds nothing
  CHECK(list.size() == 2);
  REQUIRE(list);
  list(7);
  CHECK(seen == std::vector<std::string>{"first 7", "second 7"});
  list = [&](int) { seen.push_back("replaced"); };  // assigning one replaces the list
  seen.clear();
  list(1);
  CHECK(seen == std::vector<std::string>{"replaced"});
  list.clear();
  CHECK_FALSE(list);
  list(2);  // nothing to call
}

TEST_CASE("a listener's exception stops the list and reaches the caller", "[engine]") {
  int later = 0;
  yolotrain::engine::CallbackList<> list;
  list.add([] { throw std::runtime_error("listener failed"); });
  list.add([&] { ++later; });
  CHECK_THROWS_WITH(list(), "listener failed");
  CHECK(later == 0);
}
