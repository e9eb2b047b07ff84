// The step profile: an at::RecordFunction callback counting top-level ATen operators and the
// sync-forcing / data-dependent-shape ones, and a training run counted step by step.
#include "yolotrain/engine/step_profile.hpp"

#include <ATen/record_function.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"

namespace yolotrain::engine {
namespace {

// Operators that read a value back to the host or size their output from the data. On a GPU each
// waits for the queue to drain; none can be captured in a CUDA graph.
const std::vector<std::string> kSyncNames = {"aten::item",
                                             "aten::_local_scalar_dense",
                                             "aten::is_nonzero",
                                             "aten::nonzero",
                                             "aten::nonzero_numpy",
                                             "aten::argwhere",
                                             "aten::masked_select",
                                             "aten::unique",
                                             "aten::_unique",
                                             "aten::_unique2",
                                             "aten::unique_dim",
                                             "aten::unique_consecutive",
                                             "aten::unique_dim_consecutive",
                                             "aten::repeat_interleave",
                                             "aten::bincount",
                                             "aten::equal",
                                             "aten::allclose"};

// Indexing whose index may be a boolean mask (then nonzero inside: a sync and a data-dependent shape).
const std::set<std::string> kIndexNames = {"aten::index", "aten::index_put_", "aten::index_put",
                                           "aten::_index_put_impl_"};

bool has_bool_index(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  if (inputs.size() < 2 || !inputs[1].isList()) return false;
  for (const c10::IValue& v : inputs[1].toListRef()) {
    if (v.isTensor() && (v.toTensor().scalar_type() == at::kBool || v.toTensor().scalar_type() == at::kByte)) {
      return true;
    }
  }
  return false;
}

// The counts of the one live counter; the callbacks run on its thread and the autograd threads
// that inherit its thread-local state, so the counts are shared under a lock and the nesting is
// per thread.
std::mutex counts_mutex;
OperatorCounts* live_counts = nullptr;
thread_local int depth = 0;       // RecordFunction FUNCTION-scope nesting on this thread
thread_local int sync_depth = 0;  // inside a counted sync operator
constexpr const char* kCadenceRead = "yolotrain::cadence_read";

thread_local int cadence_depth = 0;  // inside a "yolotrain::cadence_read" scope

struct Frame : at::ObserverContext {
  bool user = false;     // a user scope (RECORD_FUNCTION), not an operator
  bool cadence = false;  // the user scope of a cadence read
  bool sync = false;
};

// A user scope: only "yolotrain::cadence_read" matters (its syncs are the cadence's, not a step's).
std::unique_ptr<at::ObserverContext> on_user_scope(const at::RecordFunction& fn) {
  auto frame = std::make_unique<Frame>();
  frame->user = true;
  if (std::string(fn.name()) == kCadenceRead) {
    frame->cadence = true;
    ++cadence_depth;
    std::lock_guard<std::mutex> lock(counts_mutex);
    if (live_counts) ++live_counts->cadence_reads;
  }
  return frame;
}

// yolotrain's own RECORD_FUNCTION scopes ("yolotrain::loss::assign", ...) mark code, not operators.
bool is_user_scope(const at::RecordFunction& fn) {
  return fn.scope() == at::RecordScope::USER_SCOPE || std::strncmp(fn.name(), "yolotrain::", 11) == 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (is_user_scope(fn)) return on_user_scope(fn);
  auto frame = std::make_unique<Frame>();
  const std::string name = fn.name();
  const bool top = depth++ == 0;
  std::string sync;
  if (sync_depth == 0 && cadence_depth == 0) {
    if (std::find(kSyncNames.begin(), kSyncNames.end(), name) != kSyncNames.end())
      sync = name;
    else if (kIndexNames.count(name) && has_bool_index(fn))
      sync = name + " (bool mask)";
  }
  if (!sync.empty()) {
    frame->sync = true;
    ++sync_depth;
  }
  if (top || frame->sync) {
    std::lock_guard<std::mutex> lock(counts_mutex);
    if (live_counts && top) {
      ++live_counts->operators;
      ++live_counts->by_name[name];
    }
    if (live_counts && frame->sync) ++live_counts->syncs[sync];
  }
  return frame;
}

void on_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  const auto* frame = static_cast<Frame*>(ctx);
  if (frame && frame->user) {
    if (frame->cadence) --cadence_depth;
    return;
  }
  --depth;
  if (frame && frame->sync) --sync_depth;
}

}  // namespace

std::int64_t OperatorCounts::sync_count() const {
  std::int64_t n = 0;
  for (const auto& [name, count] : syncs) n += count;
  return n;
}

OperatorCounts& OperatorCounts::operator+=(const OperatorCounts& other) {
  operators += other.operators;
  cadence_reads += other.cadence_reads;
  for (const auto& [name, count] : other.syncs) syncs[name] += count;
  for (const auto& [name, count] : other.by_name) by_name[name] += count;
  return *this;
}

std::string OperatorCounts::summary() const {
  std::vector<std::pair<std::int64_t, std::string>> sorted;
  for (const auto& [name, count] : syncs) sorted.emplace_back(-count, name);
  std::sort(sorted.begin(), sorted.end());
  std::string s = std::to_string(operators) + " operators, " + std::to_string(cadence_reads) + " cadence reads, " +
                  std::to_string(sync_count()) + " syncs";
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    s += (i == 0 ? " (" : ", ") + sorted[i].second + " " + std::to_string(-sorted[i].first);
  }
  return sorted.empty() ? s : s + ")";
}

OperatorCounter::OperatorCounter() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  if (live_counts) throw Error("OperatorCounter: one counts at a time; this process has one already");
  live_counts = new OperatorCounts();
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(on_start, on_end)
                                           .needsInputs(true)
                                           .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
}

OperatorCounter::~OperatorCounter() {
  at::removeCallback(handle_);
  std::lock_guard<std::mutex> lock(counts_mutex);
  delete live_counts;
  live_counts = nullptr;
}

OperatorCounts OperatorCounter::take() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  OperatorCounts out = std::move(*live_counts);
  *live_counts = OperatorCounts();
  return out;
}

OperatorCounts StepProfile::total() const {
  OperatorCounts t;
  for (const auto& s : steps) t += s;
  return t;
}

double StepProfile::operators_per_step() const {
  return steps.empty() ? 0.0 : double(total().operators) / double(steps.size());
}

double StepProfile::syncs_per_step() const {
  return steps.empty() ? 0.0 : double(total().sync_count()) / double(steps.size());
}

std::int64_t StepProfile::max_syncs_in_a_step() const {
  std::int64_t m = 0;
  for (const auto& s : steps) m = std::max(m, s.sync_count());
  return m;
}

StepProfile profile_training_steps(TrainConfig cfg, int warmup, int steps) {
  if (warmup < 0 || steps < 1) throw Error("profile_training_steps: warmup >= 0 and steps >= 1 needed");
  StepProfile profile;
  lifecycle::ControlToken token;
  std::unique_ptr<OperatorCounter> counter;
  int ended = 0;
  TrainerCallbacks cb;
  // The run's own listeners (progress line, status.json) run before the program's: a window from
  // one step's on_batch_end to the next holds one of everything.
  cb.on_train_start = [&](const TrainerProgress&) { counter = std::make_unique<OperatorCounter>(); };
  cb.on_batch_end = [&](const TrainerProgress&) {
    if (!counter) return;
    OperatorCounts counts = counter->take();
    if (++ended <= warmup) return;
    profile.steps.push_back(std::move(counts));
    if (static_cast<int>(profile.steps.size()) == steps) {
      counter.reset();
      token.request_stop();
    }
  };
  cb.on_train_end = [&](const RunResult&) { counter.reset(); };
  Trainer trainer(cfg, cb);
  const RunResult r = trainer.run(token);
  counter.reset();
  if (static_cast<int>(profile.steps.size()) < steps) {
    throw Error("profile_training_steps: the run ended (" + std::string(to_string(r.outcome)) + ": " + r.reason +
                ") after " + std::to_string(ended) + " steps, before " + std::to_string(warmup) + " + " +
                std::to_string(steps) + " were counted; give it more epochs or data");
  }
  return profile;
}

}  // namespace yolotrain::engine
