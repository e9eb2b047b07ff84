#include "yolotrain/lifecycle/control/pause.hpp"

#include <iostream>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "yolotrain/lifecycle/memory/host_memory.hpp"

namespace yolotrain::lifecycle {

PauseRelease parse_pause_release(const std::string& text) {
  if (text == "cache") return PauseRelease::Cache;
  if (text == "offload") return PauseRelease::Offload;
  if (text == "exit") return PauseRelease::Exit;
  throw Error("pause_release must be cache, offload or exit, not '" + text + "'");
}

PauseEnd pause_run(ControlToken& token, RunStatus& status, PauseRelease release, std::int64_t step,
                   const PauseSteps& steps) {
  const auto say = [&](const std::string& line) {
    if (steps.say) steps.say(line);
    else std::cout << line << std::endl;
  };
  const auto set_state = [&](RunState s) {
    if (steps.set_state) steps.set_state(s);
    else status.set_state(s);
  };
  status.note_request("pause");
  set_state(RunState::Pausing);
  token.reached(PausePhase::BeforeCheckpoint);
  steps.checkpoint();
  token.reached(PausePhase::AfterCheckpoint);
  if (release == PauseRelease::Exit) return PauseEnd::Exit;
  if (release == PauseRelease::Offload && steps.offload) steps.offload(true);
  cuda_release_cached();
  release_freed_host_memory();
  token.reached(PausePhase::AfterRelease);
  say("paused at step " + std::to_string(step) + " (" + describe(cuda_memory()) + ")");
  set_state(RunState::Paused);
  bool stopped = false;
  if (steps.wait) {
    stopped = steps.wait();
  } else {
    token.wait_while_paused();
    stopped = token.stop_requested();
  }
  if (release == PauseRelease::Offload && steps.offload) steps.offload(false);
  if (!stopped) {
    status.note_request("resume");
    say("resumed at step " + std::to_string(step));
  }
  set_state(RunState::Running);
  return stopped ? PauseEnd::Stopped : PauseEnd::Resumed;
}

}  // namespace yolotrain::lifecycle
