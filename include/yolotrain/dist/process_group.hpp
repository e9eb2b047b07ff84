#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "yolotrain/dist/dist_env.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::dist {

/// The c10d backend that carries the collectives.
enum class Backend {
  Gloo,  ///< CPU tensors (and CUDA ones through host copies); always available
  Nccl,  ///< CUDA tensors, one GPU per rank; only when the libtorch was built with NCCL
};

/// Whether this build's libtorch has c10d's NCCL backend (Debian's CPU libtorch does not).
bool nccl_available() noexcept;

/// Options of a ProcessGroup.
struct ProcessGroupOptions {
  Backend backend = Backend::Gloo;
  /// A collective that has not completed by then fails with CollectiveError (every rank waits
  /// this long for the slowest one: make it longer than any phase one rank does alone, such as
  /// rank 0's validation while the others wait at a barrier). torch's default is 30 min.
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  /// Rendezvous: how long to wait for the store and for every rank to connect.
  std::chrono::milliseconds connect_timeout = std::chrono::minutes(5);
  /// Start a Watchdog that ends the process (exit kWatchdogExitCode) when a collective is still
  /// blocked `timeout + watchdog_grace` after it started.
  bool watchdog = true;
  std::chrono::milliseconds watchdog_grace = std::chrono::seconds(30);
  /// all_reduce_mean_ / all_reduce_grads_ / broadcast_ pack tensors into flat buckets of at most
  /// this many bytes (one tensor larger than that gets a bucket of its own). DDP's default.
  std::size_t bucket_bytes = std::size_t{25} << 20;
  /// How often each rank publishes a heartbeat in the store, used to name a missing rank after a
  /// failure; 0 = timeout / 10, kept within [100 ms, 2 s].
  std::chrono::milliseconds heartbeat_interval{0};
};

/// A collective failed: a peer died or closed its connection, or it did not answer within the
/// timeout. The message names the missing rank(s) when the heartbeats tell them. The process
/// group cannot be used afterwards: end the run (torchrun --max-restarts restarts the group).
class CollectiveError : public Error {
 public:
  CollectiveError(const std::string& message, std::vector<int> missing_ranks)
      : Error(message), missing_ranks_(std::move(missing_ranks)) {}
  /// Ranks that stopped answering or never reached the collective (empty when unknown).
  const std::vector<int>& missing_ranks() const noexcept { return missing_ranks_; }

 private:
  std::vector<int> missing_ranks_;
};

/// One process's membership in a c10d process group, made from the launcher's environment:
/// a TCPStore (a client of torchrun's store when TORCHELASTIC_USE_AGENT_STORE=True, else rank 0
/// serves it), PrefixStore("/worker/attempt_<restart_count>") as Python does, and Gloo (or NCCL)
/// on top. Every collective must be called by all ranks in the same order. Not thread-safe:
/// call it from the training thread.
class ProcessGroup {
 public:
  /// Connects; blocks until every rank has joined or `options.connect_timeout` passes (then
  /// throws yolotrain::Error saying which address did not answer).
  explicit ProcessGroup(const DistEnv& env, ProcessGroupOptions options = {});
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const noexcept;
  int world_size() const noexcept;
  const DistEnv& env() const noexcept;
  const ProcessGroupOptions& options() const noexcept;

  /// Copies `root`'s tensors into every other rank's tensors in place (weights and buffers from
  /// rank 0 at start). Shapes, dtypes and order must match on all ranks; any dtype. Runs under
  /// no-grad, so leaf parameters may be passed.
  void broadcast_(std::vector<at::Tensor>& tensors, int root = 0);

  /// Replaces each tensor by its mean over the ranks, in flat buckets (flatten, all-reduce SUM,
  /// divide by world_size, copy back). Floating-point, defined tensors only.
  void all_reduce_mean_(std::vector<at::Tensor>& tensors);

  /// Averages the gradients of `parameters` (same list, same order on every rank) as DDP does,
  /// in flat buckets. A gradient missing (undefined) on some ranks counts as zeros there and is
  /// created; one missing on every rank stays undefined, so all ranks end up alike.
  void all_reduce_grads_(const std::vector<at::Tensor>& parameters);

  /// Blocks until every rank has called it (or the timeout: CollectiveError).
  void barrier();

  /// The maximum of `value` over all ranks: one tiny all-reduce (MAX). This is the per-step
  /// consensus on stop / pause / checkpoint requests (see requests.hpp).
  std::uint32_t agree_max(std::uint32_t value);

  /// Collectives started so far (each all_reduce_*/broadcast_ call counts once).
  std::uint64_t collectives() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolotrain::dist
