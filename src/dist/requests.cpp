// The per-step consensus on stop / pause / resume / checkpoint requests.
#include "yolotrain/dist/requests.hpp"

#include <algorithm>

#include "yolotrain/dist/process_group.hpp"

namespace yolotrain::dist {
namespace {

using lifecycle::StopReason;

constexpr std::uint32_t kStop = 1u << 31;
constexpr std::uint32_t kForce = 1u << 30;
constexpr int kKeyShift = 22;
constexpr std::uint32_t kKeyMask = 0xFFu;
constexpr std::uint32_t kResume = 1u << 21;
constexpr std::uint32_t kPause = 1u << 20;
constexpr std::uint32_t kSuspend = 1u << 19;
constexpr std::uint32_t kCheckpoint = 1u << 18;
constexpr std::uint32_t kSignalKey = 64;  // key = 64 + signo for signal stops

std::uint32_t stop_key(StopReason reason, int signo) {
  switch (reason) {
    case StopReason::Signal: return kSignalKey + static_cast<std::uint32_t>(std::clamp(signo, 1, 191));
    case StopReason::Remote: return 3;
    case StopReason::Preemption: return 4;
    case StopReason::Deadline: return 2;
    case StopReason::Api:
    case StopReason::None: break;
  }
  return 1;
}

}  // namespace

std::uint32_t lifecycle_bits(const lifecycle::ControlToken& token, bool group_paused) {
  std::uint32_t bits = 0;
  if (token.stop_requested()) {
    bits |= kStop | (token.force_requested() ? kForce : 0);
    bits |= stop_key(token.stop_reason(), token.stop_signal()) << kKeyShift;
  }
  if (group_paused) {
    bits |= token.pause_requested() ? kPause : kResume;  // checkpoint requests wait for the resume
    return bits;
  }
  if (token.pause_requested()) bits |= kPause | (token.suspend_requested() ? kSuspend : 0);
  if (token.checkpoint_requested()) bits |= kCheckpoint;
  return bits;
}

AgreedRequests decode_bits(std::uint32_t bits) {
  AgreedRequests a;
  a.bits = bits;
  if (bits & kStop) {
    a.stop = true;
    a.force = (bits & kForce) != 0;
    const std::uint32_t key = (bits >> kKeyShift) & kKeyMask;
    if (key > kSignalKey) {
      a.reason = StopReason::Signal;
      a.signo = static_cast<int>(key - kSignalKey);
    } else {
      a.reason = key == 4   ? StopReason::Preemption
                 : key == 3 ? StopReason::Remote
                 : key == 2 ? StopReason::Deadline
                            : StopReason::Api;
    }
    return a;
  }
  a.resume = (bits & kResume) != 0;
  if (a.resume) return a;
  a.pause = (bits & kPause) != 0;
  a.suspend = (bits & kSuspend) != 0;
  a.checkpoint = (bits & kCheckpoint) != 0;
  return a;
}

AgreedRequests apply_agreed(std::uint32_t agreed, lifecycle::ControlToken& token, bool group_paused) {
  const AgreedRequests a = decode_bits(agreed);
  if (a.stop) {
    token.adopt_stop(a.reason, a.signo, a.force);
  } else if (group_paused) {
    if (a.resume) token.request_resume();
  } else {
    // An agreed suspend pauses this rank; it stops itself only for its own suspend signal, which
    // a SIGCONT sent to it discards: a suspend agreed later cannot stop it after its continue.
    if ((a.pause || a.suspend) && !token.pause_requested()) token.request_pause();
    if (a.checkpoint) token.take_checkpoint_request();
  }
  return a;
}

AgreedRequests agree_requests(ProcessGroup& group, lifecycle::ControlToken& token, bool group_paused) {
  return apply_agreed(group.agree_max(lifecycle_bits(token, group_paused)), token, group_paused);
}

AgreedRequests wait_while_paused(ProcessGroup& group, lifecycle::ControlToken& token,
                                 std::chrono::milliseconds poll) {
  token.wait_while_paused(std::chrono::milliseconds(0));  // stops here for this rank's own suspend signal
  for (;;) {
    token.wait_while_paused(poll);  // sleeps; a local resume or stop wakes it at once
    const AgreedRequests a = agree_requests(group, token, /*group_paused=*/true);
    if (a.stop || a.resume) return a;
  }
}

}  // namespace yolotrain::dist
