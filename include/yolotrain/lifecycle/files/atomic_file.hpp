#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace yolotrain::lifecycle {

/// Options of atomic_write().
struct AtomicWriteOptions {
  /// Bytes per write(2) call.
  std::size_t chunk_bytes = 4u << 20;
  /// Called after each chunk with the bytes written so far (progress reports, tests that need a
  /// slow write). May throw: the write is then abandoned like any other failure.
  std::function<void(std::size_t written, std::size_t total)> on_progress;
};

/// Writes `parts` (concatenated) to `target` atomically: a temporary file in the same folder is
/// written, fsync'ed and renamed over `target`, then the folder is fsync'ed. Readers see the old
/// file or the new one, never a mix, and a crash at any moment leaves one of the two.
/// On any failure (ENOSPC, EACCES, EROFS, EFBIG, a short write...) `target` is untouched, the
/// temporary is removed and a yolotrain::Error names the path and the cause.
void atomic_write(const std::filesystem::path& target, const std::vector<std::string_view>& parts,
                  const AtomicWriteOptions& options = {});

/// atomic_write() of one buffer.
void atomic_write(const std::filesystem::path& target, std::string_view data,
                  const AtomicWriteOptions& options = {});

/// The name prefix of atomic_write()'s temporaries: ".<target name>.tmp-<pid>-".
std::string temporary_prefix(const std::filesystem::path& target);

/// True when `name` is one of atomic_write()'s temporaries.
bool is_temporary_name(const std::string& name);

/// Removes temporaries left in `dir` by processes that no longer run (killed mid-write).
/// Returns the removed paths.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& dir);

/// Reads a whole file; throws yolotrain::Error naming the path and the cause.
std::string read_file(const std::filesystem::path& path);

}  // namespace yolotrain::lifecycle
