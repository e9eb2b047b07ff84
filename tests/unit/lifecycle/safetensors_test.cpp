#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/safetensors.hpp"

#include "catch.hpp"
#include <nlohmann/json.hpp>

namespace lc = yolotrain::lifecycle;

namespace {

// A safetensors buffer with a hand-written header and `data_bytes` zero bytes of data.
std::string with_header(const std::string& header, std::size_t data_bytes) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return out + header + std::string(data_bytes, '\0');
}

}  // namespace

TEST_CASE("safetensors round-trips every supported dtype in order", "[lifecycle]") {
  lc::NamedTensors tensors = {
      {"f32", at::randn({2, 3})},
      {"f64", at::randn({4}, at::kDouble)},
      {"f16", at::randn({3}).to(at::kHalf)},
      {"bf16", at::randn({3}).to(at::kBFloat16)},
      {"i64", at::arange(5, at::kLong)},
      {"i32", at::arange(5, at::kInt)},
      {"u8", at::arange(7, at::kByte)},
      {"bool", at::tensor({1, 0, 1}, at::kByte).to(at::kBool)},
      {"scalar", at::tensor(3.5)},
      {"empty", at::empty({0, 4})},
      {"strided", at::arange(12, at::kFloat).reshape({3, 4}).t()},
  };
  const std::string bytes = lc::encode_safetensors(tensors, {{"format", "pt"}});
  std::map<std::string, std::string> meta;
  const lc::NamedTensors back = lc::decode_safetensors(bytes, "mem", &meta);
  CHECK(meta.at("format") == "pt");
  REQUIRE(back.size() == tensors.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    CAPTURE(tensors[i].first);
    CHECK(back[i].first == tensors[i].first);
    CHECK(back[i].second.scalar_type() == tensors[i].second.scalar_type());
    CHECK(back[i].second.sizes() == tensors[i].second.sizes());
    CHECK(back[i].second.equal(tensors[i].second));
  }
  CHECK(lc::encode_safetensors(back, {{"format", "pt"}}) == bytes);  // byte-identical second write
  const auto header_len = static_cast<std::size_t>(static_cast<unsigned char>(bytes[0]) |
                                                   (static_cast<unsigned char>(bytes[1]) << 8));
  CHECK(header_len % 8 == 0);
  CHECK(nlohmann::json::parse(bytes.substr(8, header_len))["f32"]["dtype"] == "F32");
}

TEST_CASE("malformed safetensors are refused with the reason", "[lifecycle]") {
  CHECK_THROWS_WITH(lc::decode_safetensors("abc", "x.safetensors", nullptr),
                    Catch::Contains("x.safetensors") && Catch::Contains("shorter than 8 bytes"));
  std::string huge(8, '\xff');
  CHECK_THROWS_WITH(lc::decode_safetensors(huge, "f", nullptr), Catch::Contains("runs past the end"));
  CHECK_THROWS_WITH(lc::decode_safetensors(with_header("{not json", 0), "f", nullptr),
                    Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(
      lc::decode_safetensors(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "f",
                             nullptr),
      Catch::Contains("past the data section"));
  CHECK_THROWS_WITH(
      lc::decode_safetensors(with_header(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8), "f",
                             nullptr),
      Catch::Contains("unknown dtype"));
  CHECK_THROWS_WITH(
      lc::decode_safetensors(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "f",
                             nullptr),
      Catch::Contains("need 12 bytes"));
  CHECK_THROWS_WITH(lc::decode_safetensors(
                        with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                    12),
                        "f", nullptr),
                    Catch::Contains("overlap"));
  CHECK_THROWS_WITH(
      lc::decode_safetensors(with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "f",
                             nullptr),
      Catch::Contains("negative"));
}

TEST_CASE("duplicate names and unsupported dtypes are refused on write", "[lifecycle]") {
  CHECK_THROWS_AS(lc::encode_safetensors({{"a", at::ones(1)}, {"a", at::ones(1)}}), yolotrain::Error);
  CHECK_THROWS_WITH(lc::encode_safetensors({{"c", at::ones(1, at::kComplexFloat)}}),
                    Catch::Contains("does not support"));
}
