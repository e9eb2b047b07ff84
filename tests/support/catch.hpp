#pragma once
// Catch2 for the tests, written once for Catch2 2 (Debian 12: one header, catch2/catch.hpp) and
// Catch2 3 (Debian 13: catch2/catch_all.hpp, its string matchers in Catch::Matchers, Approx in
// Catch::). The tests spell Catch2 2's names; under Catch2 3 they are provided here.
// Include libtorch's headers before this one: glog's CHECK would replace Catch2's.
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>

#include <string>

using Catch::Approx;

namespace Catch {
using Matchers::EndsWith;
using Matchers::Equals;
using Matchers::StartsWith;
// Catch2 2's Contains(string) is Catch2 3's ContainsSubstring.
inline Matchers::StringContainsMatcher Contains(const std::string& text,
                                                CaseSensitive sensitivity = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, sensitivity);
}
}  // namespace Catch
#else
#include <catch2/catch.hpp>
#endif
