#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace yolotrain::io {

struct PickleValue;
/// Values are shared: the pickle memo hands the same object to several places. The root that
/// read_pickle() returns owns the whole graph (cycles included); a value taken out of it stays
/// valid on its own, but its links to other values are cleared once the root is gone.
using PickleRef = std::shared_ptr<PickleValue>;

/// One value of a data-only pickle. Classes and functions are recorded by name (`Global`) and
/// never resolved: calling one (REDUCE, NEWOBJ) gives an `Object` that holds the callee and its
/// arguments, and BUILD stores its state there. A few callables whose meaning is data are read as
/// that data: collections.OrderedDict and builtins.dict -> Dict, builtins.set/frozenset -> Set,
/// torch.Size -> Tuple, _codecs.encode -> Bytes; the torch archive reader adds tensors.
struct PickleValue {
  enum class Kind { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict, Set, Global, Object, Tensor, Storage };
  Kind kind = Kind::None;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string s;                                  ///< String/Bytes text; Global "module.name"
  std::vector<PickleRef> items;                   ///< List/Tuple/Set elements
  std::vector<std::pair<PickleRef, PickleRef>> dict;  ///< Dict entries in insertion order
  PickleRef callee, args, state;                  ///< Object: what was called, with what, BUILD state
  at::Tensor tensor;                              ///< Tensor, Storage (a flat 1-D tensor of its elements)

  /// The Dict entry whose key is the string `key`, or nullptr.
  PickleRef get(const std::string& key) const;
  /// For an Object: the class or function it came from ("module.name"); "" otherwise.
  std::string class_name() const;
  /// Kind as a word, for messages ("dict", "object of ultralytics.nn.tasks.DetectionModel", ...).
  std::string describe() const;
  bool is_none() const { return kind == Kind::None; }
};

/// Turns a persistent id (BINPERSID's argument) into a value; torch.save uses them for storages.
using PersistentLoad = std::function<PickleRef(const PickleRef& pid)>;

/// Turns a call of `callee` (a Global) with `args` into a value, or returns nullptr to record it
/// as an Object. Called for REDUCE and NEWOBJ.
using ReduceHook = std::function<PickleRef(const std::string& callee, const PickleRef& args)>;

/// Reads a pickle (protocols 0-5) as data, without running anything. Accepted opcodes: the
/// constants and containers (NONE, NEWTRUE/NEWFALSE, INT, BININT/BININT1/BININT2, LONG/LONG1/LONG4,
/// FLOAT/BINFLOAT, BINSTRING/SHORT_BINSTRING, the BINUNICODE and BINBYTES families, BYTEARRAY8,
/// EMPTY_LIST/LIST, EMPTY_TUPLE/TUPLE/TUPLE1-3, EMPTY_DICT/
/// DICT, EMPTY_SET/FROZENSET, APPEND(S), SETITEM(S), ADDITEMS), the stack and memo (MARK, POP, POP_MARK,
/// DUP, PUT/BINPUT/LONG_BINPUT, GET/BINGET/LONG_BINGET, MEMOIZE), GLOBAL and STACK_GLOBAL (names
/// only), REDUCE, NEWOBJ, NEWOBJ_EX and BUILD (recorded, see PickleValue), BINPERSID (via
/// `persistent_load`), PROTO, FRAME and STOP. Anything else (INST, OBJ, EXT*, PERSID, the text
/// STRING and UNICODE, out-of-band buffers), a truncated stream, a bad memo index or a malformed
/// stack throws yolotrain::Error naming `name`, the opcode and its offset.
PickleRef read_pickle(const std::uint8_t* data, std::size_t size, const std::string& name,
                      const PersistentLoad& persistent_load = {}, const ReduceHook& reduce = {});

}  // namespace yolotrain::io
