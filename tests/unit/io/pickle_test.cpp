#include "yolotrain/io/pickle.hpp"

#include "catch.hpp"

#include <string>

#include "test_support.hpp"

#include "yolotrain/error.hpp"

using yolotrain::io::PickleRef;
using yolotrain::io::PickleValue;
using yolotrain::io::read_pickle;
using Kind = PickleValue::Kind;

namespace {

using yolotrain::test::literal_bytes;

PickleRef parse(const std::string& bytes) {
  return read_pickle(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), "test.pkl");
}

std::string error_of(const std::string& bytes) {
  try {
    parse(bytes);
  } catch (const yolotrain::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Bytes from Python 3.11: pickle.dumps(obj, protocol=2) (the protocol torch.save uses).
TEST_CASE("read_pickle reads Python's protocol-2 containers and scalars", "[io]") {
  // {'a': [1, -2, 300, 70000, 2**40], 'b': (1.5, None, True, 'x\u00e9')}
  const std::string bytes = literal_bytes(
      "\x80\x02}q\x00(X\x01\x00\x00\x00"
      "aq\x01]q\x02(K\x01J\xfe\xff\xff\xffM,\x01Jp\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00"
      "\x01"
      "eX\x01\x00\x00\x00"
      "bq\x03(G?\xf8\x00\x00\x00\x00\x00\x00N\x88X\x03\x00\x00\x00x\xc3\xa9q\x04tq\x05u.");
  const PickleRef v = parse(bytes);
  REQUIRE(v->kind == Kind::Dict);
  const PickleRef a = v->get("a");
  REQUIRE(a->kind == Kind::List);
  REQUIRE(a->items.size() == 5);
  CHECK(a->items[0]->i == 1);
  CHECK(a->items[1]->i == -2);
  CHECK(a->items[2]->i == 300);
  CHECK(a->items[3]->i == 70000);
  CHECK(a->items[4]->i == (std::int64_t(1) << 40));
  const PickleRef b = v->get("b");
  REQUIRE(b->kind == Kind::Tuple);
  REQUIRE(b->items.size() == 4);
  CHECK(b->items[0]->f == 1.5);
  CHECK(b->items[1]->is_none());
  CHECK(b->items[2]->b);
  CHECK(b->items[3]->s == "x\xc3\xa9");
}

TEST_CASE("read_pickle records classes by name and runs nothing", "[io]") {
  // GLOBAL os.system, ('echo pwned',), REDUCE: a classic exploit becomes an inert Object.
  const std::string bytes = literal_bytes(
      "\x80\x02"
      "cposix\nsystem\nq\x00X\n\x00\x00\x00"
      "echo pwnedq\x01\x85q\x02Rq\x03.");
  const PickleRef v = parse(bytes);
  REQUIRE(v->kind == Kind::Object);
  CHECK(v->class_name() == "posix.system");
  REQUIRE(v->args->items.size() == 1);
  CHECK(v->args->items[0]->s == "echo pwned");
  // An object with state: NEWOBJ then BUILD, as torch modules are pickled.
  const std::string obj = literal_bytes("\x80\x02" "cmod\nKlass\n)\x81}X\x01\x00\x00\x00" "kK\x07sb.");
  const PickleRef o = parse(obj);
  CHECK(o->class_name() == "mod.Klass");
  REQUIRE(o->state);
  CHECK(o->state->get("k")->i == 7);
}

TEST_CASE("read_pickle maps OrderedDict, set, torch.Size and _codecs.encode to data", "[io]") {
  // collections.OrderedDict() + SETITEMS; __builtin__.set([1]); _codecs.encode('\xff', 'latin1')
  const std::string od = literal_bytes(
      "\x80\x02"
      "ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00kq\x02K\x01s.");
  const PickleRef d = parse(od);
  REQUIRE(d->kind == Kind::Dict);
  CHECK(d->get("k")->i == 1);
  const std::string set = literal_bytes("\x80\x02" "c__builtin__\nset\nq\x00]q\x01K\x01" "a\x85q\x02Rq\x03.");
  const PickleRef s = parse(set);
  REQUIRE(s->kind == Kind::Set);
  REQUIRE(s->items.size() == 1);
  const std::string enc = literal_bytes(
      "\x80\x02"
      "c_codecs\nencode\nq\x00X\x02\x00\x00\x00\xc3\xbfq\x01X\x06\x00\x00\x00latin1q\x02\x86q\x03Rq\x04.");
  const PickleRef b = parse(enc);
  REQUIRE(b->kind == Kind::Bytes);
  CHECK(b->s == std::string("\xff"));
}

TEST_CASE("read_pickle refuses malformed and unsupported pickles with the reason", "[io]") {
  CHECK_THAT(error_of("\x80\x02]q"), Catch::Contains("ends early"));                 // truncated
  CHECK_THAT(error_of(literal_bytes("\x80\x02h\x05.")), Catch::Contains("memo entry 5"));  // GET of nothing
  CHECK_THAT(error_of("\x80\x02(imod\nK\n."), Catch::Contains("unsupported opcode"));   // INST
  CHECK_THAT(error_of("\x80\x02K\x01K\x02."), Catch::Contains("2 values left"));        // STOP with two values
  CHECK_THAT(error_of("\x80\x02" "a."), Catch::Contains("stack is empty"));               // APPEND to nothing
  CHECK_THAT(error_of("\x80\x02K\x01]a."), Catch::Contains("APPEND to an int"));
  CHECK_THAT(error_of(literal_bytes("\x80\x02\x8a\x10") + std::string(16, '\x01') + "."),
             Catch::Contains("16 bytes"));
  CHECK_THAT(error_of(literal_bytes("\x80\x02X\xff\xff\xff\x7f")), Catch::Contains("ends early"));  // huge length
  CHECK_THAT(error_of("\x80\x02K\x01Q."), Catch::Contains("persistent id"));
  CHECK_THAT(error_of(""), Catch::Contains("test.pkl"));
}

TEST_CASE("read_pickle reads self-referencing structures (the root owns the cycle)", "[io]") {
  // l = []; l.append(l): EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP
  const PickleRef l = parse(literal_bytes("\x80\x02]q\x00h\x00" "a."));
  REQUIRE(l->kind == Kind::List);
  REQUIRE(l->items.size() == 1);
  CHECK(l->items[0].get() == l.get());
  // An object BUILT with itself as its state.
  const PickleRef o = parse(literal_bytes("\x80\x02" "cm\nK\n)\x81q\x00h\x00" "b."));
  CHECK(o->state.get() == o.get());
}
