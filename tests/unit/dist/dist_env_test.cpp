#include "yolotrain/dist/dist_env.hpp"

#include "catch.hpp"

#include "dist_test_support.hpp"
#include "yolotrain/error.hpp"

using yolotrain::Error;
using yolotrain::dist::DistEnv;
using yolotrain::test::ScopedEnv;

namespace {

/// torchrun's environment for rank 1 of 2, with `changes` applied.
std::map<std::string, std::optional<std::string>> torchrun_env(
    std::map<std::string, std::optional<std::string>> changes = {}) {
  std::map<std::string, std::optional<std::string>> env{
      {"RANK", "1"},          {"WORLD_SIZE", "2"},     {"LOCAL_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"},
      {"TORCHELASTIC_RESTART_COUNT", "3"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
  for (const auto& [k, v] : changes) env[k] = v;
  return env;
}

std::string error_of(const std::map<std::string, std::optional<std::string>>& changes) {
  ScopedEnv env(torchrun_env(changes));
  try {
    DistEnv::from_environment();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("dist env: torchrun's variables are read", "[dist]") {
  ScopedEnv env(torchrun_env());
  const auto e = DistEnv::from_environment();
  REQUIRE(e);
  CHECK(e->rank == 1);
  CHECK(e->world_size == 2);
  CHECK(e->local_rank == 1);
  CHECK(e->local_world_size == 2);
  CHECK(e->master_addr == "127.0.0.1");
  CHECK(e->master_port == 29500);
  CHECK(e->restart_count == 3);
  CHECK(e->use_agent_store);
  CHECK(e->describe() == "rank 1/2 (local 1/2), store 127.0.0.1:29500 (torchrun's), attempt 3");
}

TEST_CASE("dist env: a single process needs none of it", "[dist]") {
  {
    ScopedEnv env(torchrun_env({{"WORLD_SIZE", std::nullopt}}));
    CHECK_FALSE(DistEnv::from_environment());
  }
  {
    ScopedEnv env(torchrun_env({{"WORLD_SIZE", "1"}, {"RANK", "0"}, {"MASTER_ADDR", std::nullopt}}));
    CHECK_FALSE(DistEnv::from_environment());
  }
}

TEST_CASE("dist env: Slurm-style variables without torchrun's get defaults", "[dist]") {
  ScopedEnv env(torchrun_env({{"LOCAL_RANK", std::nullopt},
                              {"LOCAL_WORLD_SIZE", std::nullopt},
                              {"TORCHELASTIC_RESTART_COUNT", std::nullopt},
                              {"TORCHELASTIC_USE_AGENT_STORE", std::nullopt}}));
  const auto e = DistEnv::from_environment();
  REQUIRE(e);
  CHECK(e->local_rank == 1);
  CHECK(e->local_world_size == 2);
  CHECK(e->restart_count == 0);
  CHECK_FALSE(e->use_agent_store);
}

TEST_CASE("dist env: bad values name the variable", "[dist]") {
  CHECK_THAT(error_of({{"RANK", "2"}}), Catch::Contains("RANK=\"2\" is outside 0..1"));
  CHECK_THAT(error_of({{"RANK", std::nullopt}}), Catch::Contains("RANK is not set"));
  CHECK_THAT(error_of({{"WORLD_SIZE", "two"}}), Catch::Contains("WORLD_SIZE=\"two\" is not an integer"));
  CHECK_THAT(error_of({{"WORLD_SIZE", "0"}}), Catch::Contains("WORLD_SIZE=\"0\" is outside"));
  CHECK_THAT(error_of({{"MASTER_PORT", "70000"}}), Catch::Contains("MASTER_PORT=\"70000\" is outside 1..65535"));
  CHECK_THAT(error_of({{"MASTER_PORT", "29500x"}}), Catch::Contains("MASTER_PORT=\"29500x\" is not an integer"));
  CHECK_THAT(error_of({{"MASTER_ADDR", std::nullopt}}), Catch::Contains("MASTER_ADDR is not set"));
  CHECK_THAT(error_of({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}), Catch::Contains("LOCAL_RANK"));
  CHECK_THAT(error_of({{"TORCHELASTIC_USE_AGENT_STORE", "yes"}}),
             Catch::Contains("TORCHELASTIC_USE_AGENT_STORE=\"yes\" is not True or False"));
  CHECK_THAT(error_of({{"TORCHELASTIC_RESTART_COUNT", "-1"}}), Catch::Contains("TORCHELASTIC_RESTART_COUNT"));
}
