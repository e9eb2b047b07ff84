#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "yolotrain/dist/requests.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"

namespace yolotrain::dist {
class ProcessGroup;
}

namespace yolotrain::engine {

/// The trainer's view of its ranks. Launched by torchrun (or anything setting WORLD_SIZE > 1),
/// it joins the c10d process group; in a single process every call is a cheap pass-through, so
/// the training loop reads the same either way.
class RankGroup {
 public:
  RankGroup() = default;
  /// Joins the group described by the environment, if any; `timeout_s` bounds every collective.
  static RankGroup from_environment(double timeout_s);
  RankGroup(RankGroup&&) noexcept;
  RankGroup& operator=(RankGroup&&) noexcept;
  ~RankGroup();

  bool active() const { return group_ != nullptr; }
  int rank() const;
  int world_size() const;
  int local_world_size() const;
  /// This process's index among the ranks on its machine (its GPU under torchrun).
  int local_rank() const;
  /// Rank 0: the one that validates and writes the run folder.
  bool leader() const { return rank() == 0; }

  /// The requests to act on at this step boundary: agreed by every rank (one tiny all-reduce),
  /// or the token's own in a single process (a checkpoint request is taken off the token).
  dist::AgreedRequests agree(lifecycle::ControlToken& token);
  /// Blocks while paused; returns what ended the pause (resume or stop), agreed by every rank.
  dist::AgreedRequests wait_while_paused(lifecycle::ControlToken& token);
  /// Rank 0's text on every rank.
  std::string broadcast_string(const std::string& text);
  /// Rank 0's numbers on every rank.
  std::vector<double> broadcast_numbers(const std::vector<double>& numbers);
  /// Rank 0's values of these tensors (parameters and buffers) on every rank.
  void broadcast_tensors(std::vector<at::Tensor> tensors);
  /// Averages the parameters' gradients over the ranks (DDP's all-reduce).
  void average_gradients(const std::vector<at::Tensor>& parameters);
  void barrier();

 private:
  std::unique_ptr<dist::ProcessGroup> group_;
};

}  // namespace yolotrain::engine
