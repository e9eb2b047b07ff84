#pragma once
// Heartbeats in the store, and the diagnosis of which rank is missing after a failed collective.
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace yolotrain::dist::detail {

/// An exception's message without c10's backtrace.
std::string message_of(const std::exception& e);

/// Which ranks are missing, and a sentence saying why.
struct Diagnosis {
  std::vector<int> missing;
  std::string text;
};

/// Each rank writes "alive/<rank>" = "<beat> <collective>" every `interval` from its own thread;
/// diagnose() reads every rank's value twice, 2 intervals apart: a rank whose beat did not move
/// is gone (killed, stopped, or its machine is unreachable); one whose beat moved but whose
/// collective number is behind ours is alive but has not reached the collective.
class PeerMonitor {
 public:
  /// `store_is_rank0` says that rank 0 serves the store (no torchrun agent): when the store is
  /// unreachable, rank 0 is then the missing one.
  PeerMonitor(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
              std::chrono::milliseconds interval, bool store_is_rank0);
  ~PeerMonitor();
  PeerMonitor(const PeerMonitor&) = delete;
  PeerMonitor& operator=(const PeerMonitor&) = delete;

  /// This rank entered collective number `seq` (published with the next heartbeat).
  void at_collective(std::uint64_t seq) noexcept { seq_.store(seq, std::memory_order_relaxed); }
  /// Blocks about 2 intervals; never throws.
  Diagnosis diagnose();

 private:
  struct Beat {
    bool present = false;
    std::uint64_t beat = 0;
    std::uint64_t seq = 0;
  };
  void beat_once();
  std::vector<Beat> read_all();
  void run();

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds interval_;
  bool store_is_rank0_;
  std::atomic<std::uint64_t> seq_{0};
  std::uint64_t beats_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace yolotrain::dist::detail
