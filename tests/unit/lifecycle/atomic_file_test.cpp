#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"

#include "catch.hpp"
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "test_support.hpp"

namespace fs = std::filesystem;
namespace lc = yolotrain::lifecycle;
using yolotrain::test::slurp;
using yolotrain::test::TempDir;

namespace {

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The message of the yolotrain::Error that `body` throws, or "ok".
std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const yolotrain::Error& e) {
    return e.what();
  }
  return "ok";
}

// Runs `body` in a forked child; returns what it wrote to a pipe (the error text, or "ok").
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string text;
    try {
      text = body();
    } catch (const std::exception& e) {
      text = e.what();
    }
    (void)!write(fds[1], text.data(), text.size());
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return text;
}

// Checks the failure contract: an Error naming the file, the old content intact, no temporary.
void check_failed_write(const std::string& error, const fs::path& target, const std::string& old,
                        const std::string& cause) {
  CAPTURE(error);
  CHECK_THAT(error, Catch::Contains(target.string()));
  CHECK_THAT(error, Catch::Contains(cause));
  CHECK(slurp(target) == old);
  CHECK(names_in(target.parent_path()) == std::vector<std::string>{target.filename().string()});
}

}  // namespace

TEST_CASE("atomic_write creates and replaces a file and leaves no temporary", "[lifecycle]") {
  TempDir dir;
  const fs::path target = dir / "state.bin";
  lc::atomic_write(target, "first");
  CHECK(slurp(target) == "first");
  lc::atomic_write(target, std::vector<std::string_view>{"sec", "ond"});
  CHECK(slurp(target) == "second");
  CHECK(names_in(dir.path()) == std::vector<std::string>{"state.bin"});
}

TEST_CASE("atomic_write reports progress per chunk", "[lifecycle]") {
  TempDir dir;
  lc::AtomicWriteOptions options;
  options.chunk_bytes = 10;
  std::vector<std::size_t> seen;
  options.on_progress = [&](std::size_t written, std::size_t total) {
    CHECK(total == 25);
    seen.push_back(written);
  };
  lc::atomic_write(dir / "f", std::string(25, 'x'), options);
  CHECK(seen == std::vector<std::size_t>{10, 20, 25});
}

TEST_CASE("an interrupted write leaves the old file and no temporary", "[lifecycle]") {
  TempDir dir;
  const fs::path target = dir / "ckpt";
  lc::atomic_write(target, "old");
  lc::AtomicWriteOptions options;
  options.chunk_bytes = 4;
  options.on_progress = [](std::size_t written, std::size_t) {
    if (written >= 8) throw yolotrain::Error("interrupted");
  };
  CHECK_THROWS_WITH(lc::atomic_write(target, std::string(100, 'n'), options), "interrupted");
  CHECK(slurp(target) == "old");
  CHECK(names_in(dir.path()) == std::vector<std::string>{"ckpt"});
}

TEST_CASE("a file-size limit (EFBIG) fails cleanly", "[lifecycle]") {
  TempDir dir;
  const fs::path target = dir / "big";
  lc::atomic_write(target, "old");
  const std::string error = in_child([&] {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{1000, 1000};
    setrlimit(RLIMIT_FSIZE, &limit);
    lc::atomic_write(target, std::string(5000, 'x'));
    return std::string("ok");
  });
  check_failed_write(error, target, "old", "File too large");
}

TEST_CASE("a full disk (ENOSPC) fails cleanly", "[lifecycle]") {
  TempDir dir;
  const fs::path mnt = dir / "tiny";
  fs::create_directory(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
    WARN("skipped: cannot mount a tiny tmpfs here (" << std::strerror(errno) << "); EFBIG covers short writes");
    return;
  }
  const fs::path target = mnt / "ckpt";
  lc::atomic_write(target, "old");
  check_failed_write(error_of([&] { lc::atomic_write(target, std::string(1 << 20, 'x')); }), target, "old",
                     "No space left on device");
  umount(mnt.c_str());
}

TEST_CASE("a read-only file system (EROFS) fails cleanly", "[lifecycle]") {
  TempDir dir;
  const fs::path mnt = dir / "ro";
  fs::create_directory(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
    WARN("skipped: cannot mount a tmpfs here (" << std::strerror(errno) << ")");
    return;
  }
  const fs::path target = mnt / "ckpt";
  lc::atomic_write(target, "old");
  REQUIRE(mount(nullptr, mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0);
  check_failed_write(error_of([&] { lc::atomic_write(target, "new"); }), target, "old", "Read-only file system");
  umount(mnt.c_str());
}

TEST_CASE("a folder without write permission (EACCES) fails cleanly", "[lifecycle]") {
  TempDir dir;
  const fs::path locked = dir / "locked";
  fs::create_directory(locked);
  const fs::path target = locked / "ckpt";
  lc::atomic_write(target, "old");
  chmod(locked.c_str(), 0555);
  chmod(dir.path().c_str(), 0755);
  const std::string error = in_child([&] {
    // root ignores permission bits: drop to "nobody" in the child so they apply.
    if (geteuid() == 0 && setuid(65534) != 0) return std::string("setuid failed");
    lc::atomic_write(target, "new");
    return std::string("ok");
  });
  chmod(locked.c_str(), 0755);
  check_failed_write(error, target, "old", "Permission denied");
}

TEST_CASE("stale temporaries of dead processes are removed and live ones kept", "[lifecycle]") {
  TempDir dir;
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string stale = ".ckpt.tmp-" + std::to_string(dead) + "-0";
  const std::string live = ".ckpt.tmp-" + std::to_string(getppid()) + "-0";
  lc::atomic_write(dir / stale, "x");
  lc::atomic_write(dir / live, "x");
  lc::atomic_write(dir / "ckpt", "keep");
  const auto removed = lc::remove_stale_temporaries(dir.path());
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].filename() == stale);
  CHECK(names_in(dir.path()) == std::vector<std::string>{live, "ckpt"});
}

TEST_CASE("read_file names the missing file", "[lifecycle]") {
  CHECK_THROWS_WITH(lc::read_file("/nonexistent/x"), Catch::Contains("/nonexistent/x"));
}
