#include "rank_group.hpp"

#include <cstring>

#include "yolotrain/dist/dist_env.hpp"
#include "yolotrain/dist/process_group.hpp"

namespace yolotrain::engine {

RankGroup RankGroup::from_environment(double timeout_s) {
  RankGroup g;
  const std::optional<dist::DistEnv> env = dist::DistEnv::from_environment();
  if (!env) return g;
  dist::ProcessGroupOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000.0));
  g.group_ = std::make_unique<dist::ProcessGroup>(*env, options);
  return g;
}

RankGroup::RankGroup(RankGroup&&) noexcept = default;
RankGroup& RankGroup::operator=(RankGroup&&) noexcept = default;
RankGroup::~RankGroup() = default;

int RankGroup::rank() const { return group_ ? group_->rank() : 0; }
int RankGroup::world_size() const { return group_ ? group_->world_size() : 1; }
int RankGroup::local_world_size() const { return group_ ? group_->env().local_world_size : 1; }
int RankGroup::local_rank() const { return group_ ? group_->env().local_rank : 0; }

dist::AgreedRequests RankGroup::agree(lifecycle::ControlToken& token) {
  if (group_) return dist::agree_requests(*group_, token);
  dist::AgreedRequests a;
  a.stop = token.stop_requested();
  a.reason = token.stop_reason();
  a.signo = token.stop_signal();
  a.pause = !a.stop && token.pause_requested();
  a.checkpoint = token.take_checkpoint_request();
  return a;
}

dist::AgreedRequests RankGroup::wait_while_paused(lifecycle::ControlToken& token) {
  if (group_) return dist::wait_while_paused(*group_, token);
  token.wait_while_paused();
  dist::AgreedRequests a;
  a.stop = token.stop_requested();
  a.resume = !a.stop;
  return a;
}

std::string RankGroup::broadcast_string(const std::string& text) {
  if (!group_) return text;
  std::vector<at::Tensor> size{at::tensor({static_cast<std::int64_t>(text.size())}, at::kLong)};
  group_->broadcast_(size, 0);
  std::vector<at::Tensor> bytes{at::zeros({size[0].item<std::int64_t>()}, at::kByte)};
  if (leader() && !text.empty()) std::memcpy(bytes[0].data_ptr(), text.data(), text.size());
  if (bytes[0].numel() > 0) group_->broadcast_(bytes, 0);
  return std::string(static_cast<const char*>(bytes[0].data_ptr()), static_cast<std::size_t>(bytes[0].numel()));
}

std::vector<double> RankGroup::broadcast_numbers(const std::vector<double>& numbers) {
  if (!group_) return numbers;
  std::vector<at::Tensor> t{at::tensor(numbers, at::kDouble)};
  group_->broadcast_(t, 0);
  return std::vector<double>(t[0].data_ptr<double>(), t[0].data_ptr<double>() + t[0].numel());
}

void RankGroup::broadcast_tensors(std::vector<at::Tensor> tensors) {
  if (group_) group_->broadcast_(tensors, 0);
}

void RankGroup::average_gradients(const std::vector<at::Tensor>& parameters) {
  if (group_) group_->all_reduce_grads_(parameters);
}

void RankGroup::barrier() {
  if (group_) group_->barrier();
}

}  // namespace yolotrain::engine
