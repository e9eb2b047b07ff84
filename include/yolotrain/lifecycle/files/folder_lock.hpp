#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>

#include "yolotrain/error.hpp"

namespace yolotrain::lifecycle {

/// Another process holds the folder's lock (FolderLock).
class FolderLockedError : public Error {
 public:
  FolderLockedError(const std::string& message, std::optional<pid_t> holder) : Error(message), holder_(holder) {}
  /// The PID of the process that holds the lock, when it could be read.
  std::optional<pid_t> holder() const { return holder_; }

 private:
  std::optional<pid_t> holder_;
};

/// One writer per folder: an advisory lock (flock) on `<dir>/.lock`, held while this object
/// lives, with the holder's PID written in the file. The kernel releases it when the process
/// ends however it ends (SIGKILL included), so a dead run never leaves a stale lock; the file
/// itself stays and is harmless. Not inherited by child processes (close-on-exec).
class FolderLock {
 public:
  /// Takes the lock (creating `dir` and the file if needed). Throws FolderLockedError naming the
  /// holder's PID when another process holds it, yolotrain::Error when the file cannot be opened.
  explicit FolderLock(const std::filesystem::path& dir);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;

  /// The PID holding `dir`'s lock now, or nothing when it is free (or never was taken).
  static std::optional<pid_t> holder(const std::filesystem::path& dir);
  /// The lock file of `dir`.
  static std::filesystem::path file(const std::filesystem::path& dir) { return dir / ".lock"; }

 private:
  int fd_ = -1;
};

}  // namespace yolotrain::lifecycle
