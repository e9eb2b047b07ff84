#include "custom_loop.hpp"

#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/optim/sgd.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "yolotrain/lifecycle/checkpoint/optimizer_state_key.hpp"
#include "yolotrain/lifecycle/control/pause.hpp"
#include "yolotrain/endpoint/bearer_token.hpp"
#include "yolotrain/endpoint/control_server.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"

namespace custom_loop {
namespace lc = yolotrain::lifecycle;
using yolotrain::Error;

namespace {

constexpr std::int64_t kSamples = 1024;
constexpr std::int64_t kClasses = 10;
constexpr std::int64_t kSize = 16;
constexpr std::int64_t kPad = 2;

// splitmix64: a counter-based generator, so every random choice is a function of its inputs.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0) {
  return mix(mix(mix(a) ^ b) ^ c);
}

// A deterministic image-classification set: class-specific bright squares and stripes plus noise,
// padded by kPad on each side for random crops.
struct Dataset {
  torch::Tensor images;  // [N, 3, kSize + 2*kPad, kSize + 2*kPad]
  torch::Tensor labels;  // [N]
};

Dataset make_dataset(std::uint64_t seed) {
  const std::int64_t side = kSize + 2 * kPad;
  Dataset d{torch::zeros({kSamples, 3, side, side}), torch::empty({kSamples}, torch::kLong)};
  auto img = d.images.accessor<float, 4>();
  auto lab = d.labels.accessor<std::int64_t, 1>();
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const std::int64_t c = static_cast<std::int64_t>(mix(seed, 1, i) % kClasses);
    lab[i] = c;
    for (std::int64_t ch = 0; ch < 3; ++ch) {
      for (std::int64_t y = 0; y < kSize; ++y) {
        for (std::int64_t x = 0; x < kSize; ++x) {
          const double noise = (mix(seed, i, (ch * kSize + y) * kSize + x) % 1000) / 1000.0 - 0.5;
          const bool square = y / 4 == c % 4 && x / 4 == (c / 4 + ch) % 4;
          const double stripe = ((x + y * (c % 3)) % (2 + c % 4) == 0) ? 0.3 : 0.0;
          img[i][ch][y + kPad][x + kPad] = static_cast<float>((square ? 1.0 : 0.0) + stripe + 0.3 * noise);
        }
      }
    }
  }
  return d;
}

// The sample order of an epoch: a Fisher-Yates shuffle driven by (seed, epoch).
std::vector<std::int64_t> epoch_order(std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::int64_t> order(kSamples);
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t i = kSamples - 1; i > 0; --i) {
    std::swap(order[i], order[mix(seed, 2, epoch * kSamples + i) % (i + 1)]);
  }
  return order;
}

// One batch: random crop and flip per sample, driven by (seed, epoch, sample).
std::pair<torch::Tensor, torch::Tensor> make_batch(const Dataset& data, const Options& o, std::int64_t step,
                                                   std::int64_t steps_per_epoch) {
  const std::int64_t epoch = step / steps_per_epoch;
  const auto order = epoch_order(o.seed, epoch);
  std::vector<torch::Tensor> xs;
  std::vector<std::int64_t> ys;
  for (std::int64_t k = 0; k < o.batch; ++k) {
    const std::int64_t i = order[(step % steps_per_epoch) * o.batch + k];
    const std::uint64_t r = mix(o.seed, 3, epoch * kSamples + i);
    torch::Tensor x = data.images[i].narrow(1, r % (2 * kPad + 1), kSize).narrow(2, (r >> 8) % (2 * kPad + 1), kSize);
    xs.push_back((r >> 16) & 1 ? x.flip({2}) : x);
    ys.push_back(data.labels[i].item<std::int64_t>());
  }
  return {torch::stack(xs), torch::tensor(ys, torch::kLong)};
}

torch::nn::Sequential make_model(const Options& o) {
  namespace nn = torch::nn;
  nn::Sequential m(nn::Conv2d(nn::Conv2dOptions(3, 16, 3).padding(1).bias(false)), nn::BatchNorm2d(16),
                   nn::ReLU(), nn::MaxPool2d(2),
                   nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1).bias(false)), nn::BatchNorm2d(32),
                   nn::ReLU(), nn::MaxPool2d(2), nn::Flatten());
  std::int64_t features = 32 * (kSize / 4) * (kSize / 4);
  if (o.fc_width > 0) {
    m->push_back(nn::Linear(features, o.fc_width));
    m->push_back(nn::ReLU());
    features = o.fc_width;
  }
  m->push_back(nn::Linear(features, kClasses));
  return m;
}

double learning_rate(std::int64_t step, std::int64_t steps) {
  const double progress = static_cast<double>(step) / static_cast<double>(std::max<std::int64_t>(steps, 1));
  return 0.005 + 0.045 * 0.5 * (1.0 + std::cos(M_PI * progress));
}

class Run {
 public:
  Run(const Options& o, lc::ControlToken& token, std::ostream& log)
      : o_(o), token_(token), log_(log), device_(o.device == "cuda" ? torch::kCUDA : torch::kCPU),
        model_(nullptr),
        store_(lc::CheckpointStoreOptions{o.dir, 2, model_id(o), "ckpt", {}}),
        status_(o.dir / "status.json", std::chrono::milliseconds(1000)) {
    if (!o.control.empty()) open_control();
  }

  Result run();
  /// run(), with a failure (a checkpoint that cannot be written, ...) also recorded in status.json.
  Result run_reporting_failures() {
    try {
      return run();
    } catch (const std::exception& e) {
      status_.set_error(e.what());
      status_.set_state(lc::RunState::Failed);
      throw;
    }
  }

 private:
  static std::string model_id(const Options& o) { return "custom_loop/cnn-fc" + std::to_string(o.fc_width); }
  std::string config_text() const {
    return "seed=" + std::to_string(o_.seed) + " batch=" + std::to_string(o_.batch) +
           " steps=" + std::to_string(o_.steps) + " fc_width=" + std::to_string(o_.fc_width);
  }
  void resume();
  lc::Checkpoint snapshot();
  void checkpoint(bool wait);
  std::vector<torch::Tensor*> momentum_buffers();
  void move_state(torch::Device device);
  bool pause();  // false: the run must exit (pause_release=exit)
  void handle_checkpoint_request();
  void hold();
  void report_saved();
  void say(const std::string& line) { if (!o_.quiet) log_ << line << std::endl; }
  void open_control();

  Options o_;
  lc::ControlToken& token_;
  std::ostream& log_;
  torch::Device device_;
  torch::nn::Sequential model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  lc::CheckpointStore store_;
  lc::RunStatus status_;
  std::unique_ptr<yolotrain::endpoint::ControlServer> control_;  // after status_: closed before it goes
  std::int64_t step_ = 0;
  std::int64_t steps_per_epoch_ = 1;
  std::int64_t saved_step_ = -1;
  std::int64_t reported_step_ = -1;
  double loss_ = 0;
  Result result_;
};

// --control: the same requests as the signals, over HTTP, beside the same token; the server reads
// this run's status. Closed when the run is over (a request waiting for "stopped" hears it).
void Run::open_control() {
  yolotrain::endpoint::ControlServerOptions options;
  try {
    options.address = yolotrain::endpoint::parse_listen_address(o_.control);
    if (!o_.control_token_file.empty()) options.token = yolotrain::endpoint::read_token_file(o_.control_token_file);
    control_ = std::make_unique<yolotrain::endpoint::ControlServer>(token_, options);
  } catch (const yolotrain::Error& e) {
    throw UsageError(std::string("--control: ") + e.what());
  }
  control_->attach(status_);
  say("control: listening on " + control_->url());
}

std::vector<torch::Tensor*> Run::momentum_buffers() {
  // One slot per parameter, in parameter order; nullptr where SGD has no buffer yet.
  std::vector<torch::Tensor*> out;
  auto& state = optimizer_->state();
  for (auto& p : model_->parameters()) {
    auto it = state.find(lc::optimizer_state_key(state, p));
    out.push_back(it == state.end() ? nullptr
                                    : &static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer());
  }
  return out;
}

lc::Checkpoint Run::snapshot() {
  lc::NamedTensors live;
  for (const auto& item : model_->named_parameters()) live.emplace_back("model." + item.key(), item.value());
  for (const auto& item : model_->named_buffers()) live.emplace_back("model." + item.key(), item.value());
  const auto buffers = momentum_buffers();
  const auto names = model_->named_parameters().keys();
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i] != nullptr) live.emplace_back("optim.momentum." + names[i], *buffers[i]);
  }
  lc::Checkpoint c;
  c.meta.step = step_;
  c.meta.epoch = step_ / steps_per_epoch_;
  c.meta.config = config_text();
  c.tensors = lc::host_snapshot(live, store_.take_spare());  // the only copy the loop waits for
  return c;
}

void Run::checkpoint(bool wait) {
  if (saved_step_ == step_ && !wait) return;
  if (saved_step_ != step_) {
    store_.save_async(snapshot());
    saved_step_ = step_;
  }
  if (!wait) return;
  store_.wait();
  report_saved();
}

void Run::report_saved() {
  const auto saved = store_.last_saved();
  if (!saved || saved->second.step == reported_step_) return;
  reported_step_ = saved->second.step;
  result_.checkpoint = saved->first;
  status_.set_checkpoint(saved->first, saved->second.step, saved->second.wall_time);
}

void Run::resume() {
  lc::LoadResult found = store_.load_latest();
  for (const auto& s : found.skipped) log_ << "skipping " << s.reason << std::endl;
  if (!found.checkpoint) {
    if (!found.skipped.empty()) {
      throw Error("no usable checkpoint in " + o_.dir.string() + " (" + std::to_string(found.skipped.size()) +
                  " failed verification, see above); move them away or use another --dir");
    }
    return;
  }
  const lc::Checkpoint& c = *found.checkpoint;
  if (c.meta.config != config_text()) {
    throw UsageError("the checkpoint " + found.path.string() + " was made with '" + c.meta.config +
                           "', this run asks for '" + config_text() +
                           "'; rerun with the same arguments or use another --dir");
  }
  torch::NoGradGuard no_grad;
  for (auto& item : model_->named_parameters()) item.value().copy_(c.tensor("model." + item.key()));
  for (auto& item : model_->named_buffers()) item.value().copy_(c.tensor("model." + item.key()));
  auto& state = optimizer_->state();
  const auto params = model_->named_parameters();
  for (const auto& item : params) {
    for (const auto& [name, t] : c.tensors) {
      if (name != "optim.momentum." + item.key()) continue;
      auto st = std::make_unique<torch::optim::SGDParamState>();
      st->momentum_buffer(t.to(device_));
      state[lc::optimizer_state_key(state, item.value())] = std::move(st);
    }
  }
  step_ = c.meta.step;
  saved_step_ = step_;
  reported_step_ = step_;
  result_.resumed_from = step_;
  result_.checkpoint = found.path;
  status_.set_checkpoint(found.path, c.meta.step, c.meta.wall_time);
  log_ << "resumed from step " << step_ << std::endl;
}

void Run::move_state(torch::Device device) {
  model_->to(device);
  for (torch::Tensor* b : momentum_buffers()) {
    if (b != nullptr) *b = b->to(device);
  }
}

bool Run::pause() {
  lc::PauseSteps steps;
  steps.checkpoint = [&] { checkpoint(true); };
  steps.offload = [&](bool to_host) { move_state(to_host ? torch::Device(torch::kCPU) : device_); };
  steps.say = [&](const std::string& line) { say(line); };
  return lc::pause_run(token_, status_, lc::parse_pause_release(o_.pause_release), step_, steps) != lc::PauseEnd::Exit;
}

// --hold-at-step: the step shows in status.json, then the loop waits for any request.
void Run::hold() {
  status_.write();
  while (!token_.stop_requested() && !token_.pause_requested() && !token_.suspend_requested() &&
         !token_.checkpoint_requested()) {
    token_.wait_for_request(std::chrono::milliseconds(100));
  }
}

void Run::handle_checkpoint_request() {
  if (!token_.take_checkpoint_request()) return;
  status_.note_request("checkpoint");
  checkpoint(true);
  say("checkpoint at step " + std::to_string(step_));
}

Result Run::run() {
  if (o_.threads > 0) torch::set_num_threads(o_.threads);
  else torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  steps_per_epoch_ = kSamples / o_.batch;
  torch::manual_seed(o_.seed);
  model_ = make_model(o_);
  model_->to(device_);
  optimizer_ = std::make_unique<torch::optim::SGD>(
      model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(5e-4));
  const Dataset data = make_dataset(o_.seed);
  resume();
  status_.set_state(lc::RunState::Running);
  auto last_save = std::chrono::steady_clock::now();
  const auto started = last_save;
  const std::int64_t first_step = step_;
  auto& lr_options = static_cast<torch::optim::SGDOptions&>(optimizer_->param_groups()[0].options());
  while (step_ < o_.steps) {
    handle_checkpoint_request();
    if (token_.pause_requested() && !token_.stop_requested() && !pause()) {
      result_.outcome = Outcome::Exited;
      break;
    }
    if (token_.stop_requested()) {
      result_.outcome = Outcome::Stopped;
      break;
    }
    auto [x, y] = make_batch(data, o_, step_, steps_per_epoch_);
    lr_options.lr(learning_rate(step_, o_.steps));
    optimizer_->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model_->forward(x.to(device_)), y.to(device_));
    loss.backward();
    optimizer_->step();
    ++step_;
    loss_ = loss.item<double>();
    status_.set_metric("loss", loss_);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    status_.set_throughput(static_cast<double>(step_ + 1 - first_step) / seconds, "steps/s");
    status_.set_progress(step_, step_ / steps_per_epoch_);
    report_saved();
    if (step_ % std::max<std::int64_t>(1, o_.steps / 10) == 0) {
      say("step " + std::to_string(step_) + "/" + std::to_string(o_.steps) + " epoch " +
          std::to_string(step_ / steps_per_epoch_) + " loss " + std::to_string(loss_));
    }
    const bool by_steps = o_.save_every_steps > 0 && step_ % o_.save_every_steps == 0;
    const bool by_time = o_.save_interval_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - last_save).count() >= o_.save_interval_s;
    if (by_steps || by_time) {
      checkpoint(false);
      last_save = std::chrono::steady_clock::now();
    }
    if (o_.step_delay_ms > 0) token_.wait_for_request(std::chrono::milliseconds(o_.step_delay_ms));
    if (step_ == o_.hold_at_step) hold();
  }
  if (step_ >= o_.steps) result_.outcome = Outcome::Completed;
  status_.set_state(result_.outcome == Outcome::Completed ? lc::RunState::Completed : lc::RunState::Stopping);
  if (result_.outcome == Outcome::Stopped) status_.note_request(token_.stop_description() + ": stop");
  checkpoint(true);
  result_.step = step_;
  if (result_.outcome == Outcome::Completed) {
    lc::Sha256 sha;
    auto add = [&](const torch::Tensor& t) {
      const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
      sha.update(c.data_ptr(), c.numel() * c.element_size());
    };
    for (const auto& p : model_->parameters()) add(p);
    for (const auto& b : model_->buffers()) add(b);
    result_.digest = sha.hex_digest();
    say("final loss " + std::to_string(loss_));
  } else {
    status_.set_state(lc::RunState::Stopped);
  }
  return result_;
}

}  // namespace

Result train(const Options& opts, lc::ControlToken& token, std::ostream& log) {
  if (opts.steps <= 0) throw UsageError("--steps must be a positive number of steps");
  if (opts.batch <= 0 || opts.batch > kSamples) {
    throw UsageError("--batch must be between 1 and " + std::to_string(kSamples));
  }
  if (opts.pause_release != "cache" && opts.pause_release != "offload" && opts.pause_release != "exit") {
    throw UsageError("--pause-release must be cache, offload or exit, not '" + opts.pause_release + "'");
  }
  if (opts.device != "cpu" && opts.device != "cuda") {
    throw UsageError("--device must be cpu or cuda, not '" + opts.device + "'");
  }
  if (opts.device == "cuda" && !lc::cuda_usable()) {
    throw UsageError("--device cuda asked for, but " +
                std::string(lc::built_with_cuda() ? "no CUDA device is visible" : "this build has no CUDA"));
  }
  Run run(opts, token, log);
  return run.run_reporting_failures();
}

}  // namespace custom_loop
