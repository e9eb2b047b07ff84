// A data-only pickle reader: a small stack machine over Python's opcodes that builds PickleValues
// and never resolves a class or calls a function (docs/io.md). Written by hand because no
// library Debian packages reads pickles from C++ as data: libtorch's own unpickler resolves
// classes (it refuses ultralytics.*), and Python's pickle runs code.

#include "yolotrain/io/pickle.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "yolotrain/error.hpp"

namespace yolotrain::io {

using Kind = PickleValue::Kind;

PickleRef PickleValue::get(const std::string& key) const {
  for (const auto& [k, v] : dict) {
    if (k && k->kind == Kind::String && k->s == key) return v;
  }
  return nullptr;
}

std::string PickleValue::class_name() const {
  return kind == Kind::Object && callee && callee->kind == Kind::Global ? callee->s : "";
}

std::string PickleValue::describe() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an int";
    case Kind::Float: return "a float";
    case Kind::String: return "a string";
    case Kind::Bytes: return "bytes";
    case Kind::List: return "a list";
    case Kind::Tuple: return "a tuple";
    case Kind::Dict: return "a dict";
    case Kind::Set: return "a set";
    case Kind::Global: return "the name " + s;
    case Kind::Object: return class_name().empty() ? "an object" : "an object of " + class_name();
    case Kind::Tensor: return "a tensor";
    case Kind::Storage: return "a storage";
  }
  return "a value";
}

namespace {

// Every value a pickle creates, owned together. A pickle may hold cycles (a BUILD of an object
// with itself, a list appended to itself), which shared pointers alone would leak, and deep
// nesting, which would recurse in their destructors: the arena unlinks every value first, then
// frees them one by one.
struct Arena {
  std::vector<PickleRef> values;
  ~Arena() {
    for (auto& v : values) {
      v->items.clear();
      v->dict.clear();
      v->callee.reset();
      v->args.reset();
      v->state.reset();
    }
  }
};

thread_local Arena* current_arena = nullptr;  // the arena of the read_pickle() running on this thread

PickleRef make(Kind kind) {
  auto v = std::make_shared<PickleValue>();
  v->kind = kind;
  if (current_arena) current_arena->values.push_back(v);
  return v;
}

PickleRef make_int(std::int64_t i) {
  auto v = make(Kind::Int);
  v->i = i;
  return v;
}

// Python str -> latin-1 bytes (what _codecs.encode(s, "latin1") returns for protocol-2 bytes).
std::string latin1_from_utf8(const std::string& s, const std::string& where) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size() && c <= 0xC3) {
      out += static_cast<char>(((c & 0x1F) << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F));
    } else {
      throw Error(where + ": _codecs.encode of a character beyond latin-1");
    }
  }
  return out;
}

class Machine {
 public:
  Machine(const std::uint8_t* data, std::size_t size, std::string name, const PersistentLoad& persistent_load,
          const ReduceHook& reduce)
      : p_(data), size_(size), name_(std::move(name)), persistent_load_(persistent_load), reduce_(reduce) {}

  PickleRef run() {
    while (true) {
      op_at_ = pos_;
      op_ = byte();
      if (op_ == '.') {
        if (stack_.size() != 1 || !marks_.empty()) fail("STOP with " + std::to_string(stack_.size()) + " values left");
        return stack_.back();
      }
      step();
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    char op[8];
    std::snprintf(op, sizeof(op), "0x%02x", op_);
    throw Error(name_ + ": not a pickle this reader accepts: opcode " + op + " at byte " + std::to_string(op_at_) +
                ": " + what);
  }

  const std::uint8_t* take(std::size_t n) {
    if (n > size_ - pos_) fail("the data ends early (" + std::to_string(n) + " bytes wanted, " +
                               std::to_string(size_ - pos_) + " left)");
    const std::uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  std::uint8_t byte() { return *take(1); }
  std::uint64_t little(std::size_t n) {
    const std::uint8_t* b = take(n);
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) v |= std::uint64_t(b[k]) << (8 * k);
    return v;
  }
  std::string text(std::size_t n) {
    const std::uint8_t* b = take(n);
    return std::string(reinterpret_cast<const char*>(b), n);
  }
  std::string line() {
    const std::size_t start = pos_;
    while (pos_ < size_ && p_[pos_] != '\n') ++pos_;
    if (pos_ >= size_) fail("a text argument has no end of line");
    ++pos_;
    return std::string(reinterpret_cast<const char*>(p_ + start), pos_ - start - 1);
  }

  PickleRef pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("the stack is empty");
    PickleRef v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  PickleRef& top() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("the stack is empty");
    return stack_.back();
  }
  std::vector<PickleRef> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const std::size_t at = marks_.back();
    marks_.pop_back();
    std::vector<PickleRef> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(at)),
                                 std::make_move_iterator(stack_.end()));
    stack_.resize(at);
    return items;
  }
  void push(PickleRef v) { stack_.push_back(std::move(v)); }
  void push_string(Kind kind, std::string s) {
    auto v = make(kind);
    v->s = std::move(s);
    push(std::move(v));
  }
  PickleRef tuple(std::vector<PickleRef> items) {
    auto v = make(Kind::Tuple);
    v->items = std::move(items);
    return v;
  }

  void memo_put(std::int64_t index) { memo_[index] = top(); }
  void memo_get(std::int64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    push(it->second);
  }

  void append(const PickleRef& to, std::vector<PickleRef> items) {
    if (to->kind != Kind::List && to->kind != Kind::Object && to->kind != Kind::Set)
      fail("APPEND to " + to->describe());
    for (auto& i : items) to->items.push_back(std::move(i));
  }
  void set_items(const PickleRef& to, std::vector<PickleRef> kv) {
    if (to->kind != Kind::Dict && to->kind != Kind::Object) fail("SETITEM on " + to->describe());
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    for (std::size_t k = 0; k < kv.size(); k += 2) to->dict.emplace_back(std::move(kv[k]), std::move(kv[k + 1]));
  }

  PickleRef call(const PickleRef& callee, const PickleRef& args) {
    if (args->kind != Kind::Tuple) fail("a call's arguments are " + args->describe() + ", not a tuple");
    const std::string name = callee->kind == Kind::Global ? callee->s : "";
    if (name == "collections.OrderedDict" || name == "builtins.dict") {
      auto d = make(Kind::Dict);
      if (!args->items.empty() && args->items[0]->kind == Kind::List) {
        for (const auto& pair : args->items[0]->items) {
          if (pair->kind != Kind::Tuple || pair->items.size() != 2) fail(name + " of something not (key, value)");
          d->dict.emplace_back(pair->items[0], pair->items[1]);
        }
      }
      return d;
    }
    if (name == "builtins.set" || name == "builtins.frozenset") {
      auto s = make(Kind::Set);
      if (!args->items.empty() && args->items[0]->kind == Kind::List) s->items = args->items[0]->items;
      return s;
    }
    if (name == "torch.Size") {
      if (args->items.size() != 1 || args->items[0]->kind != Kind::Tuple) fail("torch.Size of no tuple");
      return tuple(args->items[0]->items);
    }
    if (name == "_codecs.encode") {
      if (args->items.empty() || args->items[0]->kind != Kind::String) fail("_codecs.encode of no string");
      auto b = make(Kind::Bytes);
      b->s = latin1_from_utf8(args->items[0]->s, name_);
      return b;
    }
    if (reduce_ && !name.empty()) {
      if (PickleRef v = reduce_(name, args)) return v;
    }
    auto obj = make(Kind::Object);
    obj->callee = callee;
    obj->args = args;
    return obj;
  }

  void step() {
    switch (op_) {
      case 0x80: byte(); return;             // PROTO
      case 0x95: little(8); return;          // FRAME: a length hint
      case '(': marks_.push_back(stack_.size()); return;
      case '0': pop(); return;
      case '1': pop_mark(); return;
      case '2': push(top()); return;
      case 'N': push(make(Kind::None)); return;
      case 0x88:
      case 0x89: {
        auto v = make(Kind::Bool);
        v->b = op_ == 0x88;
        push(std::move(v));
        return;
      }
      case 'J': push(make_int(static_cast<std::int32_t>(little(4)))); return;
      case 'K': push(make_int(static_cast<std::int64_t>(little(1)))); return;
      case 'M': push(make_int(static_cast<std::int64_t>(little(2)))); return;
      case 0x8a: long_n(little(1)); return;  // LONG1
      case 0x8b: long_n(little(4)); return;  // LONG4
      case 'I': int_text(line()); return;
      case 'L': {
        std::string t = line();
        if (!t.empty() && t.back() == 'L') t.pop_back();
        int_text(t);
        return;
      }
      case 'F': {
        const std::string t = line();
        auto v = make(Kind::Float);
        char* end = nullptr;
        v->f = std::strtod(t.c_str(), &end);
        if (t.empty() || *end != '\0') fail("FLOAT '" + t + "' is no number");
        push(std::move(v));
        return;
      }
      case 'G': {
        const std::uint8_t* b = take(8);
        std::uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | b[k];  // big-endian
        auto v = make(Kind::Float);
        std::memcpy(&v->f, &bits, sizeof(bits));
        push(std::move(v));
        return;
      }
      case 'T': push_string(Kind::String, text(little(4))); return;        // BINSTRING
      case 'U': push_string(Kind::String, text(little(1))); return;        // SHORT_BINSTRING
      case 'X': push_string(Kind::String, text(little(4))); return;        // BINUNICODE
      case 0x8c: push_string(Kind::String, text(little(1))); return;       // SHORT_BINUNICODE
      case 0x8d: push_string(Kind::String, text(little(8))); return;       // BINUNICODE8
      case 'B': push_string(Kind::Bytes, text(little(4))); return;         // BINBYTES
      case 'C': push_string(Kind::Bytes, text(little(1))); return;         // SHORT_BINBYTES
      case 0x8e: push_string(Kind::Bytes, text(little(8))); return;        // BINBYTES8
      case 0x96: push_string(Kind::Bytes, text(little(8))); return;        // BYTEARRAY8
      case ']': push(make(Kind::List)); return;
      case ')': push(make(Kind::Tuple)); return;
      case '}': push(make(Kind::Dict)); return;
      case 0x8f: push(make(Kind::Set)); return;
      case 'l': {
        auto v = make(Kind::List);
        v->items = pop_mark();
        push(std::move(v));
        return;
      }
      case 't': push(tuple(pop_mark())); return;
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<PickleRef> items(static_cast<std::size_t>(op_ - 0x84));
        for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
        push(tuple(std::move(items)));
        return;
      }
      case 'd': {
        auto v = make(Kind::Dict);
        set_items(v, pop_mark());
        push(std::move(v));
        return;
      }
      case 0x91: {
        auto v = make(Kind::Set);
        v->items = pop_mark();
        push(std::move(v));
        return;
      }
      case 'a': {
        PickleRef item = pop();
        append(top(), {std::move(item)});
        return;
      }
      case 'e':
      case 0x90: {
        std::vector<PickleRef> items = pop_mark();
        append(top(), std::move(items));
        return;
      }
      case 's': {
        PickleRef value = pop();
        PickleRef key = pop();
        set_items(top(), {std::move(key), std::move(value)});
        return;
      }
      case 'u': {
        std::vector<PickleRef> kv = pop_mark();
        set_items(top(), std::move(kv));
        return;
      }
      case 'p': {
        const std::string t = line();
        memo_put(parse_int(t));
        return;
      }
      case 'q': memo_put(static_cast<std::int64_t>(little(1))); return;
      case 'r': memo_put(static_cast<std::int64_t>(little(4))); return;
      case 0x94: memo_put(static_cast<std::int64_t>(memo_.size())); return;
      case 'g': memo_get(parse_int(line())); return;
      case 'h': memo_get(static_cast<std::int64_t>(little(1))); return;
      case 'j': memo_get(static_cast<std::int64_t>(little(4))); return;
      case 'c': {
        std::string module = line();
        const std::string name = line();
        global(std::move(module), name);
        return;
      }
      case 0x93: {
        PickleRef name = pop();
        PickleRef module = pop();
        if (module->kind != Kind::String || name->kind != Kind::String) fail("STACK_GLOBAL of no strings");
        global(module->s, name->s);
        return;
      }
      case 'R': {
        PickleRef args = pop();
        PickleRef callee = pop();
        push(call(callee, args));
        return;
      }
      case 0x81: {
        PickleRef args = pop();
        PickleRef cls = pop();
        push(call(cls, args));
        return;
      }
      case 0x92: {
        pop();  // kwargs: recorded nowhere (no torch or Ultralytics object needs them)
        PickleRef args = pop();
        PickleRef cls = pop();
        push(call(cls, args));
        return;
      }
      case 'b': {
        PickleRef state = pop();
        top()->state = std::move(state);
        return;
      }
      case 'Q': {
        PickleRef pid = pop();
        if (!persistent_load_) fail("a persistent id, and this pickle is read without storages");
        push(persistent_load_(pid));
        return;
      }
      default:
        fail("unsupported opcode (INST, OBJ, EXT*, PERSID, STRING, UNICODE and out-of-band buffers are refused)");
    }
  }

  void global(std::string module, const std::string& name) {
    if (module == "__builtin__") module = "builtins";  // protocol 2 spells Python 3's builtins so
    push_string(Kind::Global, module + "." + name);
  }

  std::int64_t parse_int(const std::string& t) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || errno == ERANGE) fail("'" + t + "' is no 64-bit integer");
    return v;
  }
  void int_text(const std::string& t) {
    if (t == "00" || t == "01") {  // protocol 0's False / True
      auto v = make(Kind::Bool);
      v->b = t == "01";
      push(std::move(v));
      return;
    }
    push(make_int(parse_int(t)));
  }
  void long_n(std::uint64_t n) {
    if (n > 8) fail("an integer of " + std::to_string(n) + " bytes (at most 8 are read)");
    const std::uint8_t* b = take(static_cast<std::size_t>(n));
    std::uint64_t v = 0;
    for (std::uint64_t k = 0; k < n; ++k) v |= std::uint64_t(b[k]) << (8 * k);
    if (n > 0 && n < 8 && (b[n - 1] & 0x80)) v |= ~std::uint64_t(0) << (8 * n);  // sign-extend
    push(make_int(static_cast<std::int64_t>(v)));
  }

  const std::uint8_t* p_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;
  std::uint8_t op_ = 0;
  std::string name_;
  const PersistentLoad& persistent_load_;
  const ReduceHook& reduce_;
  std::vector<PickleRef> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::int64_t, PickleRef> memo_;
};

}  // namespace

PickleRef read_pickle(const std::uint8_t* data, std::size_t size, const std::string& name,
                      const PersistentLoad& persistent_load, const ReduceHook& reduce) {
  auto arena = std::make_shared<Arena>();
  Arena* outer = current_arena;
  current_arena = arena.get();
  PickleRef root;
  try {
    root = Machine(data, size, name, persistent_load, reduce).run();
  } catch (...) {
    current_arena = outer;
    throw;
  }
  current_arena = outer;
  // The root shares ownership of the arena: the whole graph lives as long as the root does.
  return PickleRef(arena, root.get());
}

}  // namespace yolotrain::io
