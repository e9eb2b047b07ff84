#pragma once

#include <chrono>
#include <cstdint>

#include "yolotrain/lifecycle/control/control_token.hpp"

namespace yolotrain::dist {

class ProcessGroup;

/// The lifecycle requests every rank agreed on at one step boundary. In a multi-process run the
/// training loop acts on these, never on its own token directly: a signal may reach one rank
/// between the agreement and the check, and ranks that decide differently stop sharing
/// collectives (and then time out).
struct AgreedRequests {
  bool stop = false;        ///< every rank stops at this step (checkpoint, then return Stopped)
  bool force = false;       ///< ... abandoning the step
  lifecycle::StopReason reason = lifecycle::StopReason::None;  ///< one reason for every rank
  int signo = 0;            ///< the signal when reason is Signal: the same exit code everywhere
  bool pause = false;       ///< pause at this step (only when not stopping)
  bool suspend = false;     ///< ... and stop the processes (Ctrl+Z) once memory is released
  bool resume = false;      ///< end the pause (only while paused)
  bool checkpoint = false;  ///< write a checkpoint now (never while paused: it waits for the resume)
  std::uint32_t bits = 0;   ///< the agreed word
};

/// This rank's requests as one word whose MAXIMUM over the ranks is the group's decision: the
/// higher bits win, in this order: stop (with force, then the reason: a signal beats a remote stop
/// (the control endpoint's), which beats a deadline, which beats an API stop; a higher signal
/// number beats a lower one, so SIGTERM beats SIGINT),
/// resume (only when `group_paused`, for a rank whose token is no longer paused), pause, suspend,
/// checkpoint. A request that loses (a checkpoint while another rank pauses) stays pending on its
/// token and is agreed at a later step.
///
/// Layout: bit 31 stop, 30 force, 22-29 stop key (1 api, 2 deadline, 3 remote, 64+signo signal),
/// 21 resume, 20 pause, 19 suspend, 18 checkpoint.
std::uint32_t lifecycle_bits(const lifecycle::ControlToken& token, bool group_paused = false);

/// The requests a word (from lifecycle_bits or agree_max) carries; a stop hides the others.
AgreedRequests decode_bits(std::uint32_t bits);

/// Decodes the agreed word and makes `token` show it, so that the rest of the loop (and the
/// exit code) sees the same thing on every rank: a stop with the agreed reason
/// (ControlToken::adopt_stop), a pause (for a suspend too), a resume (with `group_paused`), and an agreed
/// checkpoint request taken off the token (the caller writes it because AgreedRequests says so).
AgreedRequests apply_agreed(std::uint32_t agreed, lifecycle::ControlToken& token, bool group_paused = false);

/// One step's consensus: lifecycle_bits -> group.agree_max (one tiny all-reduce) -> apply_agreed.
/// Every rank calls it at the same step boundaries.
AgreedRequests agree_requests(ProcessGroup& group, lifecycle::ControlToken& token, bool group_paused = false);

/// The multi-process ControlToken::wait_while_paused(): after the group agreed on a pause (and
/// the loop checkpointed and released memory), blocks until the group agrees to resume or to
/// stop, then returns that agreement. Each rank sleeps on its token between rounds (no spinning;
/// woken at once by a local request) and the ranks agree every `poll`; a resume or stop sent to
/// any one rank ends the pause on all. A rank whose own suspend signal is pending (a terminal's
/// Ctrl+Z reaches torchrun and every worker alike) first lets it stop the process, as
/// ControlToken does; an agreed suspend alone only pauses a rank (apply_agreed), so that a
/// SIGCONT sent to a rank is never undone by a suspend agreed after it.
AgreedRequests wait_while_paused(ProcessGroup& group, lifecycle::ControlToken& token,
                                 std::chrono::milliseconds poll = std::chrono::milliseconds(200));

}  // namespace yolotrain::dist
