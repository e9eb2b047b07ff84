#pragma once
// The file-based parsers are fuzzed through one scratch file per process (in $TMPDIR, /dev/shm
// by scripts/fuzz.sh), rewritten for every input.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

inline std::filesystem::path fuzz_file(const std::string& name, const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto d = std::filesystem::path(tmp ? tmp : "/tmp") / ("yolotrain-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  return path;
}
