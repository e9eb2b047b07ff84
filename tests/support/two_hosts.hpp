#pragma once

// Two "hosts" on one machine for the multi-host tests: two network namespaces joined by a veth
// pair (10.77.0.1 and 10.77.0.2, reachable only from inside them), each process started there in
// a UTS namespace whose host name is the host's address, so that torchrun's c10d rendezvous
// advertises each node by an address the other reaches (it resolves the host name; an address
// resolves to itself, no /etc/hosts needed). Processes enter a namespace with util-linux's
// nsenter, not `ip netns exec` / `ip -n`: iproute2 6.x (Debian 13) first remounts / as a slave,
// which fails in a chroot whose / is not a mount point (CI's fresh roots). Needs root and
// iproute2 (`ip netns add`); unavailable() says why not otherwise. Everything is removed on
// destruction, the processes in them SIGKILLed first.
//
//   if (auto why = yolotrain::test::TwoHosts::unavailable()) { WARN("skipped: " << *why); return; }
//   yolotrain::test::TwoHosts hosts;
//   auto child = yolotrain::test::spawn(hosts.command(0, {"/bin/true"}), tmp / "out.txt");
//   hosts.kill_all(1);                                          // a machine lost
//   auto r = hosts.in(1, [&] { return http_request(8080, "GET", "/healthz", "", 5s, "10.77.0.2"); });

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace yolotrain::test {

class TwoHosts {
 public:
  /// Why two namespaces cannot be made here, or nothing when they can.
  static std::optional<std::string> unavailable() {
    if (::geteuid() != 0) return "needs root (ip netns, veth)";
    if (ip("-V").first != 0) return "iproute2's ip is not installed (apt-get install iproute2)";
    // torch 1.13's torchrun resolves "localhost" inside the namespace, which has no DNS: /etc/hosts must.
    if (!std::regex_search(slurp("/etc/hosts"),
                           std::regex("(^|\\n)[ \\t]*[0-9a-fA-F.:]+[ \\t]+([^\\n]*[ \\t])?localhost([ \\t]|$|\\n)"))) {
      return "/etc/hosts names no localhost here (a bare bookworm debootstrap root has none)";
    }
    const std::string probe = "ytprobe" + std::to_string(::getpid());
    const auto [code, out] = ip("netns add " + probe);
    if (code != 0) return "ip netns add failed (no CAP_SYS_ADMIN here?): " + out;
    ip("netns del " + probe);
    return std::nullopt;
  }

  TwoHosts() {
    const std::string id = std::to_string(::getpid());
    names_ = {"yta" + id, "ytb" + id};
    for (int h = 0; h < 2; ++h) must("netns add " + names_[h]);
    must("link add v" + names_[0] + " type veth peer name v" + names_[1]);
    for (int h = 0; h < 2; ++h) {
      must("link set v" + names_[h] + " netns " + names_[h]);
      must("addr add " + address(h) + "/24 dev v" + names_[h], h);
      must("link set v" + names_[h] + " up", h);
      must("link set lo up", h);
    }
  }
  ~TwoHosts() {
    for (int h = 0; h < 2; ++h) {
      kill_all(h);
      ip("netns del " + names_[h]);  // the veth pair goes with it
    }
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  const std::string& name(int host) const { return names_[host]; }
  std::string address(int host) const { return "10.77.0." + std::to_string(host + 1); }

  /// `argv` as run on `host`: in its network, its host name its address.
  std::vector<std::string> command(int host, const std::vector<std::string>& argv) const {
    std::vector<std::string> c = {"/bin/sh", "-c",
                                  "PATH=/usr/sbin:/usr/bin:/sbin:/bin exec " + enter(host) +
                                      " unshare --uts /bin/sh -c 'echo " + address(host) +
                                      " > /proc/sys/kernel/hostname && exec \"$@\"' sh \"$@\"",
                                  "sh"};
    c.insert(c.end(), argv.begin(), argv.end());
    return c;
  }

  /// SIGKILLs every process in `host`'s network: the machine is gone.
  void kill_all(int host) {
    std::istringstream pids(ip("netns pids " + names_[host]).second);
    for (long pid; pids >> pid;) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }

  /// `fn()` on a thread whose sockets are in `host`'s network (the test's own client there).
  template <class F>
  auto in(int host, F fn) -> decltype(fn()) {
    std::optional<decltype(fn())> result;
    std::thread t([&] {
      const int fd = ::open(("/run/netns/" + names_[host]).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0) result = fn();
      if (fd >= 0) ::close(fd);
    });
    t.join();
    if (!result) throw std::runtime_error("could not enter the network of " + names_[host]);
    return *result;
  }

 private:
  // `ip ARGS`, in the root network, or with `prefix` (nsenter) in front.
  static std::pair<int, std::string> ip(const std::string& args, const std::string& prefix = "") {
    TempDir tmp;
    const Finished f = run_to_end({"/bin/sh", "-c", "PATH=/usr/sbin:/usr/bin:/sbin:/bin exec " + prefix + "ip " + args},
                                  tmp / "ip.txt", std::chrono::seconds(30));
    return {f.code.value_or(-1), f.output};
  }
  // `ip ARGS` in `host`'s network (or the root's with host -1); throws with its output on failure.
  void must(const std::string& args, int host = -1) {
    const auto [code, out] = ip(args, host < 0 ? "" : enter(host) + " ");
    if (code != 0) throw std::runtime_error("ip " + args + " failed: " + out);
  }
  std::string enter(int host) const { return "nsenter --net=/run/netns/" + names_[host]; }

  std::vector<std::string> names_;
};

}  // namespace yolotrain::test
