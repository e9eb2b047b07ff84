#include "yolotrain/lifecycle/files/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace yolotrain::lifecycle {
namespace fs = std::filesystem;

namespace {

std::optional<pid_t> read_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return std::nullopt;
  const long pid = std::strtol(buf, nullptr, 10);
  return pid > 0 ? std::optional<pid_t>(static_cast<pid_t>(pid)) : std::nullopt;
}

int open_lock_file(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path path = FolderLock::file(dir);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  return fd;
}

}  // namespace

FolderLock::FolderLock(const fs::path& dir) : fd_(open_lock_file(dir)) {
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::optional<pid_t> pid = read_pid(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw Error("cannot lock " + file(dir).string() + ": " + std::strerror(err));
    throw FolderLockedError(dir.string() + " is in use by another process (" +
                                (pid ? "PID " + std::to_string(*pid) : std::string("PID unknown")) +
                                "; its status.json says what it does): wait for it to end or stop it, or use "
                                "another name=",
                            pid);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the PID in it; a second process would then say "PID unknown".
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

FolderLock::FolderLock(FolderLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

std::optional<pid_t> FolderLock::holder(const fs::path& dir) {
  const int fd = ::open(file(dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<pid_t> pid;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) pid = read_pid(fd).value_or(0);
  ::close(fd);
  return pid;
}

}  // namespace yolotrain::lifecycle
