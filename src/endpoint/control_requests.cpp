#include "control_requests.hpp"

#include <nlohmann/json.hpp>

namespace yolotrain::endpoint::detail {
namespace {

using lifecycle::RunState;

bool ended(RunState s) { return s == RunState::Stopped || s == RunState::Completed || s == RunState::Failed; }

RunState state_of(const lifecycle::RunStatus* status) { return status ? status->state() : RunState::Starting; }

}  // namespace

std::optional<Command> command_for(std::string_view path) {
  if (path == "/v1/pause") return Command::Pause;
  if (path == "/v1/resume") return Command::Resume;
  if (path == "/v1/stop") return Command::Stop;
  if (path == "/v1/checkpoint") return Command::Checkpoint;
  return std::nullopt;
}

const char* name(Command command) {
  switch (command) {
    case Command::Pause: return "pause";
    case Command::Resume: return "resume";
    case Command::Stop: return "stop";
    case Command::Checkpoint: return "checkpoint";
  }
  return "?";
}

Ticket submit(Command command, lifecycle::ControlToken& token, lifecycle::RunStatus* status,
              const std::string& peer) {
  Ticket t;
  t.command = command;
  t.step = status ? status->step() : 0;
  t.checkpoints = status ? status->checkpoints() : 0;
  const RunState state = state_of(status);
  t.ended = ended(state);
  t.paused = state == RunState::Paused;
  if (t.ended) return t;
  switch (command) {
    case Command::Pause: token.request_pause(); break;
    case Command::Resume: token.request_resume(); break;
    case Command::Stop: token.request_stop(lifecycle::StopReason::Remote); break;
    case Command::Checkpoint:
      if (state != RunState::Paused) token.request_checkpoint();
      break;
  }
  if (status) status->note_request(std::string(name(command)) + " (POST /v1/" + name(command) + " from " + peer + ")");
  return t;
}

bool reached(const Ticket& ticket, const lifecycle::RunStatus* status) {
  const RunState s = state_of(status);
  if (ended(s)) return true;
  switch (ticket.command) {
    case Command::Pause: return s == RunState::Paused;
    case Command::Resume: return s == RunState::Running;
    case Command::Stop: return false;
    case Command::Checkpoint: return s == RunState::Paused || (status && status->checkpoints() > ticket.checkpoints);
  }
  return false;
}

std::string answer(const Ticket& ticket, const lifecycle::RunStatus* status) {
  nlohmann::ordered_json j;
  j["request"] = name(ticket.command);
  j["state"] = lifecycle::to_string(state_of(status));
  j["step"] = status ? status->step() : 0;
  j["acts_at_step"] =
      ticket.ended ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(ticket.step + (ticket.paused ? 0 : 1));
  j["reached"] = reached(ticket, status);
  return j.dump() + "\n";
}

}  // namespace yolotrain::endpoint::detail
