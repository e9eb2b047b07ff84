// ProcessGroup: TCPStore rendezvous, c10d Gloo (or NCCL), bucketed collectives, failure diagnosis.
#include "yolotrain/dist/process_group.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "peer_monitor.hpp"
#include "yolotrain/dist/watchdog.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"
#include "yolotrain/torch_compat.hpp"

namespace yolotrain::dist {
namespace {

using detail::message_of;

/// Blocks the lifecycle signals while alive, so the threads c10d and Gloo start inherit the mask
/// and a signal always lands on one of the host's threads.
class LifecycleSignalsBlocked {
 public:
  LifecycleSignalsBlocked() {
    pthread_sigmask(SIG_SETMASK, nullptr, &previous_);
    lifecycle::block_lifecycle_signals_in_this_thread();
  }
  ~LifecycleSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  LifecycleSignalsBlocked(const LifecycleSignalsBlocked&) = delete;
  LifecycleSignalsBlocked& operator=(const LifecycleSignalsBlocked&) = delete;

 private:
  sigset_t previous_{};
};

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

/// GLOO_SOCKET_IFNAME (comma-separated) as Python does; loopback for a local run; else the
/// address the host name resolves to.
std::vector<std::shared_ptr<::gloo::transport::Device>> gloo_devices(const DistEnv& env) {
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  if (const char* ifnames = std::getenv("GLOO_SOCKET_IFNAME"); ifnames != nullptr && *ifnames != '\0') {
    std::string all = ifnames;
    for (std::size_t start = 0; start <= all.size();) {
      const std::size_t comma = std::min(all.find(',', start), all.size());
      if (comma > start)
        devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(all.substr(start, comma - start)));
      start = comma + 1;
    }
  } else if (is_loopback(env.master_addr)) {
    devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return devices;
}

std::chrono::milliseconds heartbeat_interval(const ProcessGroupOptions& o) {
  if (o.heartbeat_interval.count() > 0) return o.heartbeat_interval;
  return std::clamp(o.timeout / 10, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
}

/// Tensors packed into one flat buffer: same dtype and device, at most `bucket_bytes` (a larger
/// tensor alone). `extra` elements per member are reserved after the data (flags).
struct Bucket {
  std::vector<std::size_t> members;
  std::int64_t numel = 0;
};

std::vector<Bucket> plan_buckets(const std::vector<at::Tensor>& like, std::size_t bucket_bytes) {
  std::vector<Bucket> buckets;
  std::vector<std::size_t> open;  // index into buckets of the open bucket per (dtype, device) key
  std::vector<std::pair<at::ScalarType, at::Device>> keys;
  for (std::size_t i = 0; i < like.size(); ++i) {
    const at::Tensor& t = like[i];
    const std::pair<at::ScalarType, at::Device> key{t.scalar_type(), t.device()};
    const auto found = std::find(keys.begin(), keys.end(), key);
    const std::size_t k = static_cast<std::size_t>(found - keys.begin());
    if (found == keys.end()) {
      keys.push_back(key);
      open.push_back(buckets.size());
      buckets.emplace_back();
    }
    Bucket* b = &buckets[open[k]];
    const std::size_t bytes = static_cast<std::size_t>(b->numel + t.numel()) * t.element_size();
    if (!b->members.empty() && bytes > bucket_bytes) {
      open[k] = buckets.size();
      buckets.emplace_back();
      b = &buckets.back();
    }
    b->members.push_back(i);
    b->numel += t.numel();
  }
  return buckets;
}

}  // namespace

bool nccl_available() noexcept {
#ifdef USE_C10D_NCCL
  return true;
#else
  return false;
#endif
}

struct ProcessGroup::Impl {
  DistEnv env;
  ProcessGroupOptions opt;
  at::Device device{at::kCPU};
  c10::intrusive_ptr<c10d::Store> store;  // /worker/attempt_<n>
  c10::intrusive_ptr<torch_compat::CollectiveBackend> pg;
  std::unique_ptr<detail::PeerMonitor> monitor;
  std::unique_ptr<Watchdog> watchdog;
  std::uint64_t collectives = 0;
  std::optional<CollectiveError> failure;

  void connect_store();
  void create_backend();
  void start_monitoring();
  [[noreturn]] void fail(const std::string& label, const std::string& cause);
  void run(const char* op, const char* what, const std::function<c10::intrusive_ptr<c10d::Work>()>& start);
  void all_reduce_sum(at::Tensor& flat, const char* what);
};

// libtorch asks for the libuv store backend by default since 2.4; one built without libuv (Debian
// 13's 2.6) refuses that before it opens anything ("use_libuv was requested but PyTorch was built
// without libuv support"): the classic backend then, which every libtorch has.
static c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, c10d::TCPStoreOptions so) {
#if YOLOTRAIN_TORCH_AT_LEAST(2, 4)
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, so);
  } catch (const std::exception& e) {
    if (!so.useLibUV || std::string(e.what()).find("libuv") == std::string::npos) throw;
    so.useLibUV = false;
  }
#endif
  return c10::make_intrusive<c10d::TCPStore>(host, so);
}

/// TCPStore (a client of torchrun's, or served by rank 0) under /worker/attempt_<n>.
void ProcessGroup::Impl::connect_store() {
  c10d::TCPStoreOptions so;
  so.port = env.master_port;
  so.isServer = !env.use_agent_store && env.rank == 0;
  so.numWorkers = env.world_size;
  so.waitWorkers = true;
  so.timeout = opt.connect_timeout;
  c10::intrusive_ptr<c10d::Store> tcp;
  try {
    tcp = make_tcp_store(env.master_addr, so);
  } catch (const std::exception& e) {
    throw Error("dist: rank " + std::to_string(env.rank) + " could not " +
                (so.isServer ? "serve" : "reach") + " the rendezvous store at " + env.master_addr + ":" +
                std::to_string(env.master_port) + " within " + std::to_string(opt.connect_timeout.count()) +
                " ms: " + message_of(e) +
                (so.isServer ? " (is the port in use? torchrun serves it itself: is TORCHELASTIC_USE_AGENT_STORE "
                               "lost on the way?)"
                             : " (check MASTER_ADDR/MASTER_PORT and that every rank was started)"));
  }
  store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), tcp);
}

/// Gloo (or NCCL) on the store; blocks until every rank has connected.
void ProcessGroup::Impl::create_backend() {
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("yolotrain/pg", store);
  try {
    if (opt.backend == Backend::Nccl) {
#ifdef USE_C10D_NCCL
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = opt.timeout;
      device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
      pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(pg_store, env.rank, env.world_size, o);
#else
      throw Error("dist: backend NCCL asked for, but this libtorch was built without NCCL; use Gloo");
#endif
    } else {
      auto o = c10d::ProcessGroupGloo::Options::create(opt.timeout);
      o->devices = gloo_devices(env);
      pg = c10::make_intrusive<c10d::ProcessGroupGloo>(pg_store, env.rank, env.world_size, o);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("dist: rank " + std::to_string(env.rank) + " could not connect to the other ranks: " +
                message_of(e) + " (set GLOO_SOCKET_IFNAME to the network interface the ranks share)");
  }
}

/// Heartbeats (to name a missing rank) and the watchdog.
void ProcessGroup::Impl::start_monitoring() {
  const bool store_is_rank0 = !env.use_agent_store;
  monitor = std::make_unique<detail::PeerMonitor>(c10::make_intrusive<c10d::PrefixStore>("yolotrain", store),
                                                  env.rank, env.world_size, heartbeat_interval(opt), store_is_rank0);
  if (opt.watchdog) {
    watchdog = std::make_unique<Watchdog>(opt.watchdog_grace, Watchdog::OnExpire{},
                                          [this] { return monitor->diagnose().text; });
  }
}

void ProcessGroup::Impl::fail(const std::string& label, const std::string& cause) {
  const detail::Diagnosis d = monitor->diagnose();
  failure.emplace("dist: rank " + std::to_string(env.rank) + ": " + label + " failed: " + cause + ". " + d.text +
                      ". The process group cannot be used any more: end the run (torchrun --max-restarts "
                      "restarts the group, and the run resumes from its last checkpoint)",
                  d.missing);
  throw *failure;
}

void ProcessGroup::Impl::run(const char* op, const char* what,
                             const std::function<c10::intrusive_ptr<c10d::Work>()>& start) {
  if (failure) throw CollectiveError("dist: the process group failed earlier: " + std::string(failure->what()),
                                     failure->missing_ranks());
  const std::uint64_t seq = ++collectives;
  monitor->at_collective(seq);
  const std::string label = std::string(op) + " #" + std::to_string(seq) + " (" + what + ")";
  std::optional<Watchdog::Scope> watched;
  if (watchdog) watched.emplace(watchdog->watch("rank " + std::to_string(env.rank) + ": " + label, opt.timeout));
  std::string cause;
  try {
    c10::intrusive_ptr<c10d::Work> work = start();
    work->wait();
    return;
  } catch (const std::exception& e) {
    cause = message_of(e);
  }
  watched.reset();
  fail(label, cause);
}

void ProcessGroup::Impl::all_reduce_sum(at::Tensor& flat, const char* what) {
  std::vector<at::Tensor> one{flat};
  run("allreduce", what, [&] { return pg->allreduce(one, c10d::AllreduceOptions{}); });
}

ProcessGroup::ProcessGroup(const DistEnv& env, ProcessGroupOptions options) : impl_(std::make_unique<Impl>()) {
  if (env.world_size < 2 || env.rank < 0 || env.rank >= env.world_size)
    throw Error("dist: ProcessGroup needs 0 <= rank < world_size and world_size >= 2 (got rank " +
                std::to_string(env.rank) + ", world_size " + std::to_string(env.world_size) + ")");
  if (options.timeout.count() <= 0 || options.connect_timeout.count() <= 0)
    throw Error("dist: the timeouts must be positive");
  impl_->env = env;
  impl_->opt = options;
  LifecycleSignalsBlocked blocked;  // c10d's and Gloo's threads inherit the mask
  impl_->connect_store();
  impl_->create_backend();
  impl_->start_monitoring();
}

ProcessGroup::~ProcessGroup() {
  impl_->watchdog.reset();
  impl_->monitor.reset();
  impl_->pg.reset();
  impl_->store.reset();
}

int ProcessGroup::rank() const noexcept { return impl_->env.rank; }
int ProcessGroup::world_size() const noexcept { return impl_->env.world_size; }
const DistEnv& ProcessGroup::env() const noexcept { return impl_->env; }
const ProcessGroupOptions& ProcessGroup::options() const noexcept { return impl_->opt; }
std::uint64_t ProcessGroup::collectives() const noexcept { return impl_->collectives; }

void ProcessGroup::broadcast_(std::vector<at::Tensor>& tensors, int root) {
  if (root < 0 || root >= world_size())
    throw Error("dist: broadcast_ root " + std::to_string(root) + " is not a rank (0.." +
                std::to_string(world_size() - 1) + ")");
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (!tensors[i].defined()) throw Error("dist: broadcast_: tensor " + std::to_string(i) + " is undefined");
  at::NoGradGuard no_grad;
  for (const Bucket& b : plan_buckets(tensors, impl_->opt.bucket_bytes)) {
    std::vector<at::Tensor> parts;
    for (std::size_t i : b.members) parts.push_back(tensors[i].reshape(-1));
    std::vector<at::Tensor> flat{at::cat(parts)};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    impl_->run("broadcast", "broadcast_", [&] { return impl_->pg->broadcast(flat, o); });
    if (rank() == root) continue;
    std::int64_t offset = 0;
    for (std::size_t i : b.members) {
      at::Tensor& t = tensors[i];
      t.copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

void ProcessGroup::all_reduce_mean_(std::vector<at::Tensor>& tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined())
      throw Error("dist: all_reduce_mean_: tensor " + std::to_string(i) +
                  " is undefined (for gradients that may be missing, use all_reduce_grads_)");
    if (!c10::isFloatingType(tensors[i].scalar_type()))
      throw Error("dist: all_reduce_mean_: tensor " + std::to_string(i) + " is " +
                  std::string(c10::toString(tensors[i].scalar_type())) + "; only floating-point tensors average");
  }
  at::NoGradGuard no_grad;
  for (const Bucket& b : plan_buckets(tensors, impl_->opt.bucket_bytes)) {
    std::vector<at::Tensor> parts;
    for (std::size_t i : b.members) parts.push_back(tensors[i].reshape(-1));
    at::Tensor flat = at::cat(parts);
    impl_->all_reduce_sum(flat, "all_reduce_mean_");
    flat.div_(world_size());
    std::int64_t offset = 0;
    for (std::size_t i : b.members) {
      at::Tensor& t = tensors[i];
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

void ProcessGroup::all_reduce_grads_(const std::vector<at::Tensor>& parameters) {
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].defined() || !c10::isFloatingType(parameters[i].scalar_type()))
      throw Error("dist: all_reduce_grads_: parameter " + std::to_string(i) + " is undefined or not floating-point");
  }
  at::NoGradGuard no_grad;
  for (const Bucket& b : plan_buckets(parameters, impl_->opt.bucket_bytes)) {
    // [gradients..., one "defined here" flag per member]: the SUM of a flag counts the ranks
    // that have the gradient, so every rank takes the same decision for a missing one.
    const std::int64_t n_flags = static_cast<std::int64_t>(b.members.size());
    const at::Tensor& first = parameters[b.members[0]];
    at::Tensor flat = at::empty({b.numel + n_flags}, first.options().requires_grad(false));
    std::vector<double> defined;
    std::int64_t offset = 0;
    for (std::size_t i : b.members) {
      const at::Tensor& g = parameters[i].grad();
      const std::int64_t n = parameters[i].numel();
      if (g.defined()) flat.narrow(0, offset, n).copy_(g.reshape(-1));
      else flat.narrow(0, offset, n).zero_();
      defined.push_back(g.defined() ? 1.0 : 0.0);
      offset += n;
    }
    flat.narrow(0, b.numel, n_flags).copy_(at::tensor(defined, at::kDouble));
    impl_->all_reduce_sum(flat, "all_reduce_grads_");
    const at::Tensor flags = flat.narrow(0, b.numel, n_flags).to(at::kCPU, at::kDouble).contiguous();
    const double* have = flags.data_ptr<double>();
    flat.narrow(0, 0, b.numel).div_(world_size());
    offset = 0;
    for (std::size_t k = 0; k < b.members.size(); ++k) {
      const at::Tensor& p = parameters[b.members[k]];
      const std::int64_t n = p.numel();
      if (have[k] > 0) {
        if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
        p.mutable_grad().copy_(flat.narrow(0, offset, n).view(p.sizes()));
      }
      offset += n;
    }
  }
}

void ProcessGroup::barrier() {
  impl_->run("barrier", "barrier", [&] { return impl_->pg->barrier(c10d::BarrierOptions{}); });
}

std::uint32_t ProcessGroup::agree_max(std::uint32_t value) {
  std::vector<at::Tensor> one{
      at::full({1}, static_cast<std::int64_t>(value), at::TensorOptions().dtype(at::kLong).device(impl_->device))};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::MAX;
  impl_->run("allreduce", "agree_max", [&] { return impl_->pg->allreduce(one, o); });
  return static_cast<std::uint32_t>(one[0].item<std::int64_t>());
}

}  // namespace yolotrain::dist
