#pragma once

// Two "hosts" on one machine for the multi-host tests: two network namespaces joined by a veth
// pair (10.77.0.1 and 10.77.0.2, reachable only from inside them), each with its own host name
// (its own UTS namespace, the name in /etc/netns/<name>/hosts, which `ip netns exec` puts over
// /etc/hosts), so that torchrun's c10d rendezvous finds each node at its own address. Needs root
// and iproute2 (`ip netns`); unavailable() says why not otherwise. Everything is removed on
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
#include <fstream>
#include <optional>
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
      must("-n " + names_[h] + " addr add " + address(h) + "/24 dev v" + names_[h]);
      must("-n " + names_[h] + " link set v" + names_[h] + " up");
      must("-n " + names_[h] + " link set lo up");
      std::filesystem::create_directories(etc(h));
      std::ofstream(etc(h) / "hosts") << "127.0.0.1 localhost\n"
                                      << address(0) << " " << names_[0] << "\n"
                                      << address(1) << " " << names_[1] << "\n";
    }
  }
  ~TwoHosts() {
    for (int h = 0; h < 2; ++h) {
      kill_all(h);
      ip("netns del " + names_[h]);  // the veth pair goes with it
      std::error_code ec;
      std::filesystem::remove_all(etc(h), ec);
    }
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  const std::string& name(int host) const { return names_[host]; }
  std::string address(int host) const { return "10.77.0." + std::to_string(host + 1); }

  /// `argv` as run on `host`: in its network, with its host name.
  std::vector<std::string> command(int host, const std::vector<std::string>& argv) const {
    std::vector<std::string> c = {"/bin/sh", "-c",
                                  "PATH=/usr/sbin:/usr/bin:/sbin:/bin exec ip netns exec " + names_[host] +
                                      " unshare --uts /bin/sh -c 'echo " + names_[host] +
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
  static std::pair<int, std::string> ip(const std::string& args) {
    TempDir tmp;
    const Finished f =
        run_to_end({"/bin/sh", "-c", "PATH=/usr/sbin:/usr/bin:/sbin:/bin exec ip " + args}, tmp / "ip.txt",
                   std::chrono::seconds(30));
    return {f.code.value_or(-1), f.output};
  }
  void must(const std::string& args) {
    const auto [code, out] = ip(args);
    if (code != 0) throw std::runtime_error("ip " + args + " failed: " + out);
  }
  std::filesystem::path etc(int host) const { return std::filesystem::path("/etc/netns") / names_[host]; }

  std::vector<std::string> names_;
};

}  // namespace yolotrain::test
