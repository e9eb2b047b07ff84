#include "yolotrain/io/torch_archive.hpp"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include "yolotrain/error.hpp"

namespace yolotrain::io {
namespace fs = std::filesystem;
using Kind = PickleValue::Kind;

namespace {

// caffe2's MemoryReadAdapter copies without a bounds check; this one clamps.
class BytesAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BytesAdapter(const std::vector<std::uint8_t>& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= bytes_.size()) return 0;
    n = std::min<size_t>(n, bytes_.size() - static_cast<size_t>(pos));
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  const std::vector<std::uint8_t>& bytes_;
};

at::ScalarType storage_dtype(const std::string& cls, const std::string& name) {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.HalfStorage", at::kHalf},   {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong}, {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},   {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  const auto it = types.find(cls);
  if (it == types.end()) throw Error(name + ": a storage of type " + cls + ", which this reader does not know");
  return it->second;
}

std::vector<std::int64_t> int_tuple(const PickleRef& v, const std::string& what, const std::string& name) {
  if (!v || v->kind != Kind::Tuple) throw Error(name + ": a tensor's " + what + " is not a tuple");
  std::vector<std::int64_t> out;
  for (const auto& i : v->items) {
    if (i->kind != Kind::Int || i->i < 0) throw Error(name + ": a tensor's " + what + " holds a bad value");
    out.push_back(i->i);
  }
  return out;
}

// torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, hooks, ...)
PickleRef rebuild_tensor(const PickleRef& args, const std::string& name) {
  if (args->items.size() < 4 || args->items[0]->kind != Kind::Storage || args->items[1]->kind != Kind::Int) {
    throw Error(name + ": _rebuild_tensor_v2 with arguments that are not (storage, offset, size, stride, ...)");
  }
  const at::Tensor& storage = args->items[0]->tensor;
  const std::int64_t offset = args->items[1]->i;
  const auto sizes = int_tuple(args->items[2], "size", name);
  const auto strides = int_tuple(args->items[3], "stride", name);
  if (sizes.size() != strides.size() || offset < 0) throw Error(name + ": a tensor's size and stride disagree");
  // Bounds without overflow: every step of `last` stays below the storage's length.
  const std::int64_t length = storage.numel();
  std::int64_t last = offset, numel = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) numel = 0;
    if (numel != 0 && sizes[d] > length / numel + 1) numel = -1;  // more elements than the storage holds
    if (numel > 0) numel *= sizes[d];
    if (sizes[d] > 1 && strides[d] > 0) {
      if (sizes[d] - 1 > (length - last) / strides[d]) last = length;
      else last += (sizes[d] - 1) * strides[d];
    }
  }
  auto v = std::make_shared<PickleValue>();
  v->kind = Kind::Tensor;
  if (numel == 0) {
    v->tensor = at::empty(sizes, storage.options());
    return v;
  }
  if (numel < 0 || numel > length || last >= length) {
    throw Error(name + ": a tensor of " + std::to_string(sizes.size()) + " dimensions reaches beyond its storage of " +
                std::to_string(length) + " elements");
  }
  v->tensor = storage.as_strided(sizes, strides, offset).clone(at::MemoryFormat::Contiguous);
  return v;
}

class StorageLoader {
 public:
  StorageLoader(caffe2::serialize::PyTorchStreamReader& reader, std::string name)
      : reader_(reader), name_(std::move(name)) {}

  // ('storage', torch.XStorage, key, location, numel)
  PickleRef operator()(const PickleRef& pid) {
    if (pid->kind != Kind::Tuple || pid->items.size() < 5 || pid->items[0]->s != "storage" ||
        pid->items[1]->kind != Kind::Global || pid->items[2]->kind != Kind::String ||
        pid->items[4]->kind != Kind::Int) {
      throw Error(name_ + ": a persistent id that is not ('storage', type, key, location, numel)");
    }
    const at::ScalarType dtype = storage_dtype(pid->items[1]->s, name_);
    const std::string& key = pid->items[2]->s;
    auto& cached = storages_[key];
    if (!cached) cached = load(key, dtype, pid->items[4]->i);
    if (cached->tensor.scalar_type() != dtype) throw Error(name_ + ": storage " + key + " read with two dtypes");
    return cached;
  }

 private:
  PickleRef load(const std::string& key, at::ScalarType dtype, std::int64_t numel) {
    const std::string record = "data/" + key;
    if (!reader_.hasRecord(record)) throw Error(name_ + ": the archive has no record " + record);
    auto [data, bytes] = reader_.getRecord(record);
    const std::size_t element = at::elementSize(dtype);
    if (numel < 0 || static_cast<std::size_t>(numel) > bytes / element) {
      throw Error(name_ + ": record " + record + " holds " + std::to_string(bytes) + " bytes, too few for " +
                  std::to_string(numel) + " elements");
    }
    auto v = std::make_shared<PickleValue>();
    v->kind = Kind::Storage;
    v->tensor = at::empty({numel}, at::TensorOptions().dtype(dtype));
    if (numel > 0) std::memcpy(v->tensor.data_ptr(), data.get(), static_cast<std::size_t>(numel) * element);
    return v;
  }

  caffe2::serialize::PyTorchStreamReader& reader_;
  std::string name_;
  std::map<std::string, PickleRef> storages_;
};

PickleRef read_archive(caffe2::serialize::PyTorchStreamReader& reader, const std::string& name) {
  if (reader.hasRecord("byteorder")) {
    auto [data, size] = reader.getRecord("byteorder");
    const std::string order(static_cast<const char*>(data.get()), size);
    if (order != "little") throw Error(name + ": a " + order + "-endian archive; only little-endian ones are read");
  }
  if (!reader.hasRecord("data.pkl")) throw Error(name + ": a zip without data.pkl: not a torch.save file");
  auto [pkl, size] = reader.getRecord("data.pkl");
  StorageLoader storages(reader, name);
  const PersistentLoad load = [&](const PickleRef& pid) { return storages(pid); };
  const ReduceHook reduce = [&](const std::string& callee, const PickleRef& args) -> PickleRef {
    if (callee == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(args, name);
    if (callee == "torch._utils._rebuild_parameter" || callee == "torch._utils._rebuild_parameter_with_state") {
      if (args->items.empty() || args->items[0]->kind != Kind::Tensor) throw Error(name + ": a parameter of no tensor");
      return args->items[0];
    }
    return nullptr;
  };
  return read_pickle(static_cast<const std::uint8_t*>(pkl.get()), size, name + " (data.pkl)", load, reduce);
}

}  // namespace

PickleRef read_torch_archive_bytes(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  if (bytes.size() >= 2 && bytes[0] == 0x80 && bytes[1] <= 5) {
    throw Error(name + ": a legacy torch.save file (before PyTorch 1.6, not a zip); load it in Python and save it "
                "again with a newer PyTorch");
  }
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "PK\x03\x04", 4) != 0) {
    throw Error(name + ": not a torch.save file (no zip header)");
  }
  try {
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BytesAdapter>(bytes));
    return read_archive(reader, name);
  } catch (const c10::Error& e) {
    throw Error(name + ": a broken torch.save archive (" + e.what_without_backtrace() + ")");
  }
}

PickleRef read_torch_archive(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open the file");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path.string() + ": cannot read the file");
  return read_torch_archive_bytes(bytes, path.string());
}

}  // namespace yolotrain::io
