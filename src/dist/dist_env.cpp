// DistEnv: the launcher's environment (torchrun, srun, Kubernetes) parsed and checked.
#include "yolotrain/dist/dist_env.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "yolotrain/error.hpp"

namespace yolotrain::dist {
namespace {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

[[noreturn]] void fail(const std::string& name, const std::string& value, const std::string& why) {
  throw Error("distributed environment: " + name + "=\"" + value + "\" " + why +
              "; set it as torchrun does (see docs/dist.md), or unset WORLD_SIZE to run as one process");
}

/// The integer in `name`, checked to lie in [lo, hi]; `fallback` when unset (required when none).
long parse_int(const char* name, long lo, long hi, std::optional<long> fallback) {
  const char* text = get(name);
  if (text == nullptr) {
    if (fallback) return *fallback;
    throw Error(std::string("distributed environment: ") + name +
                " is not set but WORLD_SIZE > 1 needs it; set it as torchrun does (see docs/dist.md)");
  }
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') fail(name, text, "is not an integer");
  if (v < lo || v > hi)
    fail(name, text, "is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

bool parse_bool(const char* name) {
  const char* text = get(name);
  if (text == nullptr) return false;
  const std::string s = text;
  if (s == "True" || s == "true" || s == "1") return true;
  if (s == "False" || s == "false" || s == "0") return false;
  fail(name, s, "is not True or False");
}

}  // namespace

std::optional<DistEnv> DistEnv::from_environment() {
  constexpr long kMaxInt = std::numeric_limits<int>::max();
  if (get("WORLD_SIZE") == nullptr) return std::nullopt;
  DistEnv env;
  env.world_size = static_cast<int>(parse_int("WORLD_SIZE", 1, kMaxInt, std::nullopt));
  if (env.world_size == 1) return std::nullopt;
  env.rank = static_cast<int>(parse_int("RANK", 0, env.world_size - 1, std::nullopt));
  env.local_world_size =
      static_cast<int>(parse_int("LOCAL_WORLD_SIZE", 1, env.world_size, long{env.world_size}));
  env.local_rank = static_cast<int>(parse_int("LOCAL_RANK", 0, env.world_size - 1, long{env.rank}));
  if (get("LOCAL_WORLD_SIZE") != nullptr && env.local_rank >= env.local_world_size)
    fail("LOCAL_RANK", std::to_string(env.local_rank),
         "is not below LOCAL_WORLD_SIZE=" + std::to_string(env.local_world_size));
  const char* addr = get("MASTER_ADDR");
  if (addr == nullptr)
    throw Error("distributed environment: MASTER_ADDR is not set but WORLD_SIZE > 1 needs it (the host "
                "of rank 0 or of torchrun's store); set it as torchrun does (see docs/dist.md)");
  env.master_addr = addr;
  env.master_port = static_cast<std::uint16_t>(parse_int("MASTER_PORT", 1, 65535, std::nullopt));
  env.restart_count = static_cast<int>(parse_int("TORCHELASTIC_RESTART_COUNT", 0, kMaxInt, 0L));
  env.use_agent_store = parse_bool("TORCHELASTIC_USE_AGENT_STORE");
  return env;
}

std::string DistEnv::describe() const {
  return "rank " + std::to_string(rank) + "/" + std::to_string(world_size) + " (local " +
         std::to_string(local_rank) + "/" + std::to_string(local_world_size) + "), store " + master_addr +
         ":" + std::to_string(master_port) + (use_agent_store ? " (torchrun's)" : "") + ", attempt " +
         std::to_string(restart_count);
}

}  // namespace yolotrain::dist
