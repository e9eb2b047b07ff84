#include "peer_monitor.hpp"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::dist::detail {
namespace {

std::string key_of(int rank) { return "alive/" + std::to_string(rank); }

std::string ms_text(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

PeerMonitor::PeerMonitor(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                         std::chrono::milliseconds interval, bool store_is_rank0)
    : store_(std::move(store)),
      rank_(rank),
      world_size_(world_size),
      interval_(interval),
      store_is_rank0_(store_is_rank0) {
  beat_once();  // present before the first collective
  thread_ = std::thread([this] { run(); });
}

PeerMonitor::~PeerMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PeerMonitor::beat_once() {
  const std::string value = std::to_string(++beats_) + " " + std::to_string(seq_.load(std::memory_order_relaxed));
  try {
    store_->set(key_of(rank_), std::vector<std::uint8_t>(value.begin(), value.end()));
  } catch (const std::exception&) {
    // The store is gone (its server exited): diagnose() reports that when it matters.
  }
}

void PeerMonitor::run() {
  lifecycle::block_lifecycle_signals_in_this_thread();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (cv_.wait_for(lock, interval_, [this] { return stopping_; })) break;
    lock.unlock();
    beat_once();
    lock.lock();
  }
}

std::vector<PeerMonitor::Beat> PeerMonitor::read_all() {
  std::vector<Beat> out(static_cast<std::size_t>(world_size_));
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_ || !store_->check({key_of(r)})) continue;
    const std::vector<std::uint8_t> raw = store_->get(key_of(r));
    std::istringstream in(std::string(raw.begin(), raw.end()));
    Beat& b = out[static_cast<std::size_t>(r)];
    b.present = static_cast<bool>(in >> b.beat >> b.seq);
  }
  return out;
}

std::string message_of(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

Diagnosis PeerMonitor::diagnose() {
  Diagnosis d;
  const std::uint64_t mine = seq_.load(std::memory_order_relaxed);
  const auto wait = 2 * interval_ + std::chrono::milliseconds(100);
  std::vector<Beat> first, second;
  try {
    first = read_all();
    std::this_thread::sleep_for(wait);
    second = read_all();
  } catch (const std::exception& e) {
    if (store_is_rank0_ && rank_ != 0) d.missing.push_back(0);
    d.text = "The rendezvous store cannot be reached (" + message_of(e) + ")" +
             (store_is_rank0_ ? ": rank 0, which serves it, is gone"
                              : ": the launcher (torchrun), which serves it, is gone");
    return d;
  }
  std::vector<std::string> parts;
  std::vector<int> gone, behind, never;
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_) continue;
    const Beat& a = first[static_cast<std::size_t>(r)];
    const Beat& b = second[static_cast<std::size_t>(r)];
    if (!b.present) {
      never.push_back(r);
    } else if (a.present && a.beat == b.beat) {
      gone.push_back(r);
      parts.push_back("rank " + std::to_string(r) + " is gone or stopped answering (no heartbeat for " + ms_text(wait) +
                      "; its last heartbeat was sent during collective #" + std::to_string(b.seq) + ")");
    } else if (b.seq < mine) {
      behind.push_back(r);
      parts.push_back("rank " + std::to_string(r) + " is alive but has not reached collective #" +
                      std::to_string(mine) + " (it is at #" + std::to_string(b.seq) + ")");
    }
  }
  if (!never.empty())
    parts.push_back("rank(s) " + list(never) + " never published a heartbeat (did they start?)");
  for (const auto* group : {&gone, &behind, &never}) d.missing.insert(d.missing.end(), group->begin(), group->end());
  std::sort(d.missing.begin(), d.missing.end());
  if (d.missing.empty()) {
    d.text = "Every other rank is alive and at or past collective #" + std::to_string(mine) +
             " (a network problem, or a rank that left the collective after an error of its own)";
  } else {
    d.text = "Missing: rank(s) " + list(d.missing) + ": ";
    for (std::size_t i = 0; i < parts.size(); ++i) d.text += (i ? "; " : "") + parts[i];
  }
  return d;
}

}  // namespace yolotrain::dist::detail
