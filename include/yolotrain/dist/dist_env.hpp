#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace yolotrain::dist {

/// Where this process sits in a multi-process run, as a launcher describes it in the environment:
/// torchrun, Slurm's srun with the variables exported, a Kubernetes Job (see docs/dist.md).
struct DistEnv {
  int rank = 0;                   ///< RANK: 0 .. world_size-1, unique in the run
  int world_size = 1;             ///< WORLD_SIZE: processes in the run
  int local_rank = 0;             ///< LOCAL_RANK: index on this machine (default: rank)
  int local_world_size = 1;       ///< LOCAL_WORLD_SIZE: processes on this machine (default: world_size)
  std::string master_addr;        ///< MASTER_ADDR: host of the rendezvous store
  std::uint16_t master_port = 0;  ///< MASTER_PORT: its TCP port
  int restart_count = 0;          ///< TORCHELASTIC_RESTART_COUNT: torchrun's restart attempt (0 first)
  bool use_agent_store = false;   ///< TORCHELASTIC_USE_AGENT_STORE=True: torchrun serves the store

  /// The environment's description, or nothing when WORLD_SIZE is unset or 1 (a single process
  /// needs no process group). Throws yolotrain::Error naming the variable when one is missing or
  /// malformed (not a number, rank outside 0..WORLD_SIZE-1, port outside 1..65535, ...).
  static std::optional<DistEnv> from_environment();

  /// "rank 1/2 (local 1/2), store 127.0.0.1:29500, attempt 0" — for logs.
  std::string describe() const;
};

}  // namespace yolotrain::dist
