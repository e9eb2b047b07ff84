#include "yolotrain/lifecycle/files/safetensors.hpp"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

#include "yolotrain/error.hpp"

namespace yolotrain::lifecycle {
namespace {

using json = nlohmann::ordered_json;

const std::vector<std::pair<std::string, at::ScalarType>>& dtype_names() {
  static const std::vector<std::pair<std::string, at::ScalarType>> names = {
      {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf}, {"BF16", at::kBFloat16},
      {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
      {"U8", at::kByte},    {"BOOL", at::kBool}};
  return names;
}

std::string dtype_name(at::ScalarType type, const std::string& tensor) {
  for (const auto& [name, t] : dtype_names()) {
    if (t == type) return name;
  }
  throw Error("safetensors: tensor '" + tensor + "' has dtype " + at::toString(type) +
              ", which safetensors export does not support");
}

void put_u64_le(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_u64_le(std::string_view in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

struct Entry {
  std::string name;
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  std::uint64_t begin, end;
};

Entry parse_entry(const std::string& name, const json& spec, const std::string& source) {
  auto bad = [&](const std::string& why) {
    return Error("safetensors " + source + ": tensor '" + name + "': " + why);
  };
  if (!spec.is_object() || !spec.contains("dtype") || !spec.contains("shape") ||
      !spec.contains("data_offsets")) {
    throw bad("needs dtype, shape and data_offsets");
  }
  Entry e{name, at::kFloat, {}, 0, 0};
  const auto& dtype = spec["dtype"];
  const auto found = std::find_if(dtype_names().begin(), dtype_names().end(), [&](const auto& d) {
    return dtype.is_string() && d.first == dtype.get<std::string>();
  });
  if (found == dtype_names().end()) throw bad("unknown dtype " + dtype.dump());
  e.dtype = found->second;
  if (!spec["shape"].is_array()) throw bad("shape is not a list");
  for (const auto& d : spec["shape"]) {
    if (!d.is_number_unsigned()) throw bad("shape has a non-integer or negative size");
    e.shape.push_back(d.get<int64_t>());
  }
  const auto& off = spec["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    throw bad("data_offsets must be two non-negative integers");
  }
  e.begin = off[0].get<std::uint64_t>();
  e.end = off[1].get<std::uint64_t>();
  if (e.end < e.begin) throw bad("data_offsets end before they begin");
  std::uint64_t numel = 1;
  for (auto d : e.shape) {
    if (d != 0 && numel > (UINT64_MAX / 16) / static_cast<std::uint64_t>(d)) throw bad("shape too large");
    numel *= static_cast<std::uint64_t>(d);
  }
  if (numel * at::elementSize(e.dtype) != e.end - e.begin) {
    throw bad("shape and dtype need " + std::to_string(numel * at::elementSize(e.dtype)) +
              " bytes but data_offsets span " + std::to_string(e.end - e.begin));
  }
  return e;
}

}  // namespace

std::string encode_safetensors(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (header.contains(name)) throw Error("safetensors: duplicate tensor name '" + name + "'");
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const std::uint64_t bytes = t.numel() * t.element_size();
    header[name] = {{"dtype", dtype_name(t.scalar_type(), name)},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  std::string out;
  out.reserve(8 + text.size() + offset);
  put_u64_le(out, text.size());
  out += text;
  for (const auto& t : data) {
    out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  }
  return out;
}

NamedTensors decode_safetensors(std::string_view bytes, const std::string& source,
                                std::map<std::string, std::string>* metadata) {
  if (bytes.size() < 8) throw Error("safetensors " + source + ": file is shorter than 8 bytes");
  const std::uint64_t header_len = get_u64_le(bytes);
  if (header_len > bytes.size() - 8) {
    throw Error("safetensors " + source + ": header length " + std::to_string(header_len) +
                " runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
  }
  json header;
  try {
    header = json::parse(bytes.substr(8, header_len));
  } catch (const json::exception& e) {
    throw Error("safetensors " + source + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw Error("safetensors " + source + ": header is not a JSON object");
  const std::string_view data = bytes.substr(8 + header_len);
  std::vector<Entry> entries;
  for (const auto& [name, spec] : header.items()) {
    if (name == "__metadata__") {
      if (metadata != nullptr && spec.is_object()) {
        for (const auto& [k, v] : spec.items()) (*metadata)[k] = v.is_string() ? v.get<std::string>() : v.dump();
      }
      continue;
    }
    entries.push_back(parse_entry(name, spec, source));
    if (entries.back().end > data.size()) {
      throw Error("safetensors " + source + ": tensor '" + name + "' data_offsets end at " +
                  std::to_string(entries.back().end) + ", past the data section (" +
                  std::to_string(data.size()) + " bytes)");
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  NamedTensors out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (i > 0 && e.begin < entries[i - 1].end) {
      throw Error("safetensors " + source + ": tensors '" + entries[i - 1].name + "' and '" +
                  e.name + "' overlap");
    }
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(e.dtype));
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data.data() + e.begin, e.end - e.begin);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace yolotrain::lifecycle
