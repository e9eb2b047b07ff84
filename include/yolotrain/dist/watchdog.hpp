#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace yolotrain::dist {

/// Exit code of a process whose watchdog found a collective still blocked after its timeout plus
/// the grace period (69, EX_UNAVAILABLE: a peer stopped answering). Distinct from yolo_train's
/// other codes (0, 1, 2, 75, 128+signal), so a scheduler's policy can tell it apart.
inline constexpr int kWatchdogExitCode = 69;

/// A thread that watches one blocking operation at a time (a collective) and acts when it is still
/// running `timeout + grace` after it started: Gloo's own timeout normally ends such a call with
/// an exception first, so the watchdog is the last resort against a call that never returns.
/// By default it writes the message to stderr and ends the process with
/// std::_Exit(kWatchdogExitCode) — no destructors, no flushing: the process is stuck.
class Watchdog {
 public:
  /// Called on the watchdog's thread with the message when an operation expires.
  using OnExpire = std::function<void(const std::string& message)>;
  /// Adds a diagnosis (which peers are missing) to the message; may block briefly.
  using Diagnose = std::function<std::string()>;

  /// Starts the thread. `on_expire` empty: print and std::_Exit(kWatchdogExitCode).
  explicit Watchdog(std::chrono::milliseconds grace, OnExpire on_expire = {}, Diagnose diagnose = {});
  /// Stops the thread (an operation still watched is forgotten).
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Watches one operation while alive: construct it before the blocking call.
  class Scope {
   public:
    Scope(Scope&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class Watchdog;
    explicit Scope(Watchdog* owner) : owner_(owner) {}
    Watchdog* owner_;
  };

  /// Starts watching `what` (e.g. "allreduce #42 (agree_max)"), expected to end within `timeout`.
  /// One operation at a time: a second watch() replaces the first.
  [[nodiscard]] Scope watch(std::string what, std::chrono::milliseconds timeout);

  /// How many operations expired so far (for tests with a custom on_expire).
  int expired() const;

 private:
  void run();
  void finish();

  std::chrono::milliseconds grace_;
  OnExpire on_expire_;
  Diagnose diagnose_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool armed_ = false;
  std::uint64_t generation_ = 0;
  std::string what_;
  std::chrono::steady_clock::time_point started_{};
  std::chrono::milliseconds timeout_{0};
  int expired_ = 0;
  std::thread thread_;
};

}  // namespace yolotrain::dist
