#pragma once
// What each POST of a control endpoint does, apart from HTTP: the request set on the run's
// ControlToken as the matching signal sets it, noted in status.json, and when it has been carried
// out (what `?wait=` waits for).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::endpoint::detail {

enum class Command { Pause, Resume, Stop, Checkpoint };

/// The command a POST path names (/v1/pause, /v1/resume, /v1/stop, /v1/checkpoint), or none.
std::optional<Command> command_for(std::string_view path);
/// "pause", "resume", "stop", "checkpoint".
const char* name(Command command);

/// A request as it was made, and where the run stood then.
struct Ticket {
  Command command = Command::Pause;
  std::int64_t step = 0;          ///< the steps the run had completed when asked
  std::uint64_t checkpoints = 0;  ///< checkpoints written before it
  bool paused = false;            ///< the run was paused: it acts at the step it paused at
  bool ended = false;             ///< the run had already ended: nothing was asked of it
};

/// Sets `command` on `token` as its signal does (pause: request_pause, resume: request_resume,
/// stop: request_stop(Remote), checkpoint: request_checkpoint; a checkpoint asked while paused needs
/// none: the pause's checkpoint holds the current step) and notes "<command> (POST from <peer>)" in
/// `status`. `status` is null while the run starts. A run that has ended is asked nothing.
Ticket submit(Command command, lifecycle::ControlToken& token, lifecycle::RunStatus* status, const std::string& peer);

/// Whether the request has been carried out: pause -> paused, resume -> running, stop -> stopped,
/// checkpoint -> a checkpoint written since; or the run has ended (nothing more will happen).
bool reached(const Ticket& ticket, const lifecycle::RunStatus* status);

/// The answer's JSON: {"request", "state", "step", "acts_at_step", "reached"}; acts_at_step is the
/// step boundary where the run acts on it (the end of the step in progress when asked; while paused,
/// the step it paused at; null when the run had ended).
std::string answer(const Ticket& ticket, const lifecycle::RunStatus* status);

}  // namespace yolotrain::endpoint::detail
