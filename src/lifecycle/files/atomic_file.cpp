#include "yolotrain/lifecycle/files/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "yolotrain/error.hpp"

namespace yolotrain::lifecycle {
namespace fs = std::filesystem;
namespace {

std::string errno_text(int err) { return std::strerror(err); }

[[noreturn]] void fail(const fs::path& target, const std::string& what, int err) {
  throw Error("cannot write " + target.string() + ": " + what + ": " + errno_text(err) +
              (err == ENOSPC || err == EFBIG ? " (free some space or lower the file size)" : "") +
              (err == EACCES || err == EROFS || err == EPERM ? " (check the folder's permissions)"
                                                             : ""));
}

// Closes and removes the temporary unless released (the rename happened).
class TemporaryFile {
 public:
  TemporaryFile(int fd, fs::path path) : fd_(fd), path_(std::move(path)) {}
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!released_) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void release() { released_ = true; }
  const fs::path& path() const { return path_; }

 private:
  int fd_;
  fs::path path_;
  bool released_ = false;
};

void write_all(const TemporaryFile& tmp, const fs::path& target,
               const std::vector<std::string_view>& parts, const AtomicWriteOptions& options) {
  std::size_t total = 0;
  for (auto p : parts) total += p.size();
  std::size_t written = 0;
  const std::size_t chunk = options.chunk_bytes > 0 ? options.chunk_bytes : (4u << 20);
  for (auto part : parts) {
    std::size_t offset = 0;
    while (offset < part.size()) {
      const std::size_t n = std::min(chunk, part.size() - offset);
      ssize_t rc = ::write(tmp.fd(), part.data() + offset, n);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) fail(target, "write failed", errno);
      if (rc == 0) fail(target, "short write", ENOSPC);
      offset += static_cast<std::size_t>(rc);
      written += static_cast<std::size_t>(rc);
      if (options.on_progress) options.on_progress(written, total);
    }
  }
}

void fsync_dir(const fs::path& dir, const fs::path& target) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail(target, "cannot open folder " + dir.string() + " to sync it", errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) fail(target, "folder fsync failed", err);
}

fs::path parent_of(const fs::path& target) {
  fs::path dir = target.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

}  // namespace

std::string temporary_prefix(const fs::path& target) {
  return "." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-";
}

bool is_temporary_name(const std::string& name) {
  return !name.empty() && name[0] == '.' && name.find(".tmp-") != std::string::npos;
}

void atomic_write(const fs::path& target, const std::vector<std::string_view>& parts,
                  const AtomicWriteOptions& options) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = parent_of(target);
  const fs::path tmp_path = dir / (temporary_prefix(target) + std::to_string(counter++));
  int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(target, "cannot create temporary " + tmp_path.string(), errno);
  TemporaryFile tmp(fd, tmp_path);
  write_all(tmp, target, parts, options);
  if (::fsync(tmp.fd()) != 0) fail(target, "fsync failed", errno);
  if (tmp.close() != 0) fail(target, "close failed", errno);
  if (::rename(tmp_path.c_str(), target.c_str()) != 0) fail(target, "rename failed", errno);
  tmp.release();
  fsync_dir(dir, target);
}

void atomic_write(const fs::path& target, std::string_view data, const AtomicWriteOptions& options) {
  atomic_write(target, std::vector<std::string_view>{data}, options);
}

std::vector<fs::path> remove_stale_temporaries(const fs::path& dir) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_temporary_name(name)) continue;
    // ".<name>.tmp-<pid>-<n>": keep the temporaries of processes still running.
    const auto pos = name.rfind(".tmp-");
    const long pid = std::strtol(name.c_str() + pos + 5, nullptr, 10);
    if (pid > 0 && pid != ::getpid() && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) {
      continue;
    }
    if (pid == ::getpid()) continue;
    if (::unlink(entry.path().c_str()) == 0) removed.push_back(entry.path());
  }
  return removed;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot read " + path.string() + ": " + errno_text(errno));
  std::string data(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(data.data(), static_cast<std::streamsize>(data.size()))) {
    throw Error("cannot read " + path.string() + ": read error");
  }
  return data;
}

}  // namespace yolotrain::lifecycle
