// The PTX subset of tt.elementwise_inline_asm (see ptx.h). Section numbers are those of NVIDIA's
// "PTX ISA" (version 8.5): §9.7.1 integer arithmetic, §9.7.3 floating-point, §9.7.7 comparison and
// selection, §9.7.8 logic and shift, §9.7.9 data movement and conversion, §9.7.13.x griddepcontrol.
#include "ptx.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "tilescope/ir/elem.h"

namespace tilescope::ops::ptx {

namespace {

// ---------------------------------------------------------------------------------------------
// Parsing

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string strip_comments(std::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 2, "//") == 0) {
      while (i < t.size() && t[i] != '\n') ++i;
      out += '\n';
    } else if (t.compare(i, 2, "/*") == 0) {
      size_t e = t.find("*/", i + 2);
      i = e == std::string_view::npos ? t.size() : e + 1;
      out += ' ';
    } else {
      out += t[i];
    }
  }
  return out;
}

std::optional<Type> type_named(std::string_view m) {
  static const std::map<std::string_view, Type, std::less<>> kTypes = {
      {"b8", {Kind::b, 8}},
      {"b16", {Kind::b, 16}},
      {"b32", {Kind::b, 32}},
      {"b64", {Kind::b, 64}},
      {"u8", {Kind::u, 8}},
      {"u16", {Kind::u, 16}},
      {"u32", {Kind::u, 32}},
      {"u64", {Kind::u, 64}},
      {"s8", {Kind::s, 8}},
      {"s16", {Kind::s, 16}},
      {"s32", {Kind::s, 32}},
      {"s64", {Kind::s, 64}},
      {"f16", {Kind::f, 16}},
      {"f32", {Kind::f, 32}},
      {"f64", {Kind::f, 64}},
      {"pred", {Kind::pred, 1}},
      {"bf16", {Kind::f, 16, 1, true}},
      {"f16x2", {Kind::f, 16, 2}},
      {"bf16x2", {Kind::f, 16, 2, true}},
      {"e4m3x2", {Kind::f, 8, 2, false, 4}},
      {"e5m2x2", {Kind::f, 8, 2, false, 5}},
  };
  auto it = kTypes.find(m);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// A decimal count or operand number (0 .. 100000), or -1.
int small_int(std::string_view s) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && end == s.data() + s.size() && v >= 0 && v <= 100000 ? v : -1;
}

struct Parser {
  Program prog;
  std::map<std::string, int, std::less<>> names;

  [[noreturn]] static void unsupported(std::string_view instr, std::string_view why = {}) {
    std::string m = fmt::format("unsupported PTX instruction '{}'", instr);
    if (!why.empty()) m += fmt::format(" ({})", why);
    throw Error(m);
  }

  int add_reg(const std::string& name, int bits) {
    if (names.count(name)) throw Error(fmt::format("PTX register '{}' declared twice", name));
    names[name] = prog.num_regs++;
    prog.reg_bits.push_back(bits);
    return prog.num_regs - 1;
  }

  // `.reg .b32 r<4>;`, `.reg .pred p, q;`
  void declare(std::string_view st) {
    std::string_view rest = trim(st.substr(4));
    if (rest.empty() || rest[0] != '.') throw Error(fmt::format("malformed PTX declaration '{}'", st));
    size_t sp = rest.find_first_of(" \t\n");
    auto t = type_named(rest.substr(1, sp == std::string_view::npos ? sp : sp - 1));
    if (!t || t->lanes != 1 || sp == std::string_view::npos)
      throw Error(fmt::format("unsupported PTX declaration '{}'", st));
    std::string_view list = rest.substr(sp);
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t c = list.find(',', pos);
      std::string_view item =
          trim(list.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
      size_t lt = item.find('<');
      if (lt != std::string_view::npos) {
        if (item.back() != '>') throw Error(fmt::format("malformed PTX declaration '{}'", st));
        std::string base(trim(item.substr(0, lt)));
        int n = small_int(item.substr(lt + 1, item.size() - lt - 2));
        if (n <= 0 || n > 256) throw Error(fmt::format("malformed PTX declaration '{}'", st));
        for (int i = 0; i < n; ++i) add_reg(base + std::to_string(i), t->total_bits());
      } else if (!item.empty()) {
        add_reg(std::string(item), t->total_bits());
      }
      if (c == std::string_view::npos) break;
      pos = c + 1;
    }
  }

  int reg(std::string_view name, std::string_view instr) {
    if (!name.empty() && name[0] == '$') {
      int i = small_int(name.substr(1));
      if (i < 0 || i >= prog.num_operands)
        throw Error(fmt::format("PTX operand '{}' in '{}' is not one of the {} operands of the op", name,
                                instr, prog.num_operands));
      return i;
    }
    auto it = names.find(name);
    if (it == names.end()) unsupported(instr, fmt::format("unknown register '{}'", name));
    return it->second;
  }

  Operand operand(std::string_view s, std::string_view instr) {
    Operand o;
    s = trim(s);
    if (s.empty()) throw Error(fmt::format("missing operand in PTX instruction '{}'", instr));
    if (s.front() == '{') {
      if (s.back() != '}') throw Error(fmt::format("malformed vector operand in '{}'", instr));
      o.k = Operand::K::vec;
      std::string_view in = s.substr(1, s.size() - 2);
      size_t pos = 0;
      while (true) {
        size_t c = in.find(',', pos);
        o.regs.push_back(reg(trim(in.substr(pos, c == std::string_view::npos ? c : c - pos)), instr));
        if (c == std::string_view::npos) break;
        pos = c + 1;
      }
      return o;
    }
    const char c0 = s.front();
    if (std::isdigit(static_cast<unsigned char>(c0)) || c0 == '-' || c0 == '+') {
      o.k = Operand::K::imm;
      std::string str(s);
      bool neg = c0 == '-';
      std::string body = (c0 == '-' || c0 == '+') ? str.substr(1) : str;
      // §4.5.1 constants: 0fXXXXXXXX is an f32 bit pattern, 0dXXXXXXXXXXXXXXXX an f64 one.
      if (body.size() > 2 && body[0] == '0' &&
          (body[1] == 'f' || body[1] == 'F' || body[1] == 'd' || body[1] == 'D')) {
        o.imm = std::stoull(body.substr(2), nullptr, 16);
        o.imm_float = true;
        const bool f32 = body[1] == 'f' || body[1] == 'F';
        o.imm_value = f32 ? static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(o.imm)))
                          : std::bit_cast<double>(o.imm);
        if (neg) o.imm_value = -o.imm_value;
        o.imm = f32 ? std::bit_cast<uint32_t>(static_cast<float>(o.imm_value))
                    : std::bit_cast<uint64_t>(o.imm_value);
        return o;
      }
      if (body.find_first_of(".eE") != std::string::npos && body.find_first_of("xX") == std::string::npos) {
        o.imm_float = true;
        o.imm_value = std::stod(str);
        return o;
      }
      size_t used = 0;
      uint64_t v = 0;
      try {
        if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X'))
          v = std::stoull(body.substr(2), &used, 16), used += 2;
        else if (body.size() > 2 && body[0] == '0' && (body[1] == 'b' || body[1] == 'B'))
          v = std::stoull(body.substr(2), &used, 2), used += 2;
        else
          v = std::stoull(body, &used, 10);
      } catch (const std::exception&) {
        throw Error(fmt::format("malformed PTX immediate '{}' in '{}'", s, instr));
      }
      if (used < body.size() && !(used + 1 == body.size() && (body[used] == 'U' || body[used] == 'u')))
        throw Error(fmt::format("malformed PTX immediate '{}' in '{}'", s, instr));
      o.imm = neg ? ~v + 1 : v;
      return o;
    }
    if (s.find('|') != std::string_view::npos) unsupported(instr, "two destination predicates");
    o.reg = reg(s, instr);
    return o;
  }

  void instruction(std::string_view st) {
    Instr in;
    in.text = std::string(st);
    if (st.front() == '@') {
      size_t sp = st.find_first_of(" \t\n");
      if (sp == std::string_view::npos) throw Error(fmt::format("malformed PTX guard in '{}'", st));
      std::string_view g = st.substr(1, sp - 1);
      if (!g.empty() && g[0] == '!') in.guard_neg = true, g.remove_prefix(1);
      in.guard = reg(g, st);
      st = trim(st.substr(sp));
    }
    size_t sp = st.find_first_of(" \t\n");
    std::string_view name = st.substr(0, sp);
    std::string_view args = sp == std::string_view::npos ? std::string_view{} : trim(st.substr(sp));
    std::vector<std::string_view> mods;
    size_t pos = 0;
    while (true) {
      size_t d = name.find('.', pos);
      mods.push_back(name.substr(pos, d == std::string_view::npos ? d : d - pos));
      if (d == std::string_view::npos) break;
      pos = d + 1;
    }
    static const std::map<std::string_view, Opc, std::less<>> kOps = {
        {"mov", Opc::mov},   {"cvt", Opc::cvt},   {"and", Opc::and_},  {"or", Opc::or_},
        {"xor", Opc::xor_},  {"not", Opc::not_},  {"cnot", Opc::cnot}, {"shl", Opc::shl},
        {"shr", Opc::shr},   {"shf", Opc::shf},   {"add", Opc::add},   {"sub", Opc::sub},
        {"mul", Opc::mul},   {"mad", Opc::mad},   {"fma", Opc::fma},   {"div", Opc::div},
        {"min", Opc::min},   {"max", Opc::max},   {"neg", Opc::neg},   {"abs", Opc::abs},
        {"setp", Opc::setp}, {"selp", Opc::selp}, {"prmt", Opc::prmt}, {"lop3", Opc::lop3},
    };
    auto op = kOps.find(mods[0]);
    if (op == kOps.end()) unsupported(name);
    in.opc = op->second;
    std::vector<Type> types;
    static const char* const kCmp[] = {"eq", "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
                                       "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    for (size_t i = 1; i < mods.size(); ++i) {
      std::string_view m = mods[i];
      if (auto t = type_named(m)) {
        types.push_back(*t);
      } else if ((in.opc == Opc::setp && in.cmp.empty() &&
                  std::find(std::begin(kCmp), std::end(kCmp), m) != std::end(kCmp)) ||
                 (in.opc == Opc::shf && in.cmp.empty() &&
                  (m == "l" || m == "r"))) {  // comparison / direction
        in.cmp = std::string(m);
      } else if (m == "rn" || m == "rz" || m == "rm" || m == "rp") {
        in.rnd_set = true, in.rnd = m[1];
      } else if (m == "rni" || m == "rzi" || m == "rmi" || m == "rpi") {
        in.rnd_set = true, in.int_rnd = true, in.rnd = m[1];
      } else if (m == "sat") {
        in.sat = true;
      } else if (m == "satfinite") {
        in.satfinite = true;
      } else if (m == "relu") {
        in.relu = true;
      } else if (m == "ftz") {
        in.ftz = true;
      } else if ((in.opc == Opc::mul || in.opc == Opc::mad) && (m == "lo" || m == "hi" || m == "wide")) {
        in.mode = m == "wide" ? 'w' : m[0];
      } else if (in.opc == Opc::shf && (m == "wrap" || m == "clamp")) {
        in.wrap = m == "wrap";
      } else {
        unsupported(name, fmt::format("modifier '.{}'", m));
      }
    }
    if (types.empty() || types.size() > (in.opc == Opc::cvt ? 2u : 1u))
      unsupported(name, "needs one instruction type (cvt: destination and source)");
    in.t = types[0];
    if (in.opc == Opc::cvt) {
      if (types.size() != 2) unsupported(name, "cvt needs destination and source types");
      in.t2 = types[1];
    }
    check(in, name);
    // Operands: top-level commas (a vector operand {a, b} holds its own).
    std::vector<std::string_view> parts;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == '{') ++depth;
      if (args[i] == '}') --depth;
      if (args[i] == ',' && depth == 0) parts.push_back(args.substr(start, i - start)), start = i + 1;
    }
    if (!args.empty()) parts.push_back(args.substr(start));
    for (auto p : parts) in.ops.push_back(operand(p, st));
    check_operands(in, st);
    prog.code.push_back(std::move(in));
  }

  // Which type / modifier combinations run exactly (everything else is unsupported, never guessed).
  static void check(const Instr& in, std::string_view name) {
    const Type& t = in.t;
    const bool scalar_float = t.kind == Kind::f && t.lanes == 1 && !t.bf16 && t.bits >= 32;
    const bool integer = t.kind == Kind::b || t.kind == Kind::u || t.kind == Kind::s;
    auto need = [&](bool ok, const char* why) {
      if (!ok) unsupported(name, why);
    };
    if (in.rnd_set && in.opc != Opc::cvt) need(in.rnd == 'n' && !in.int_rnd, "only round-to-nearest .rn");
    switch (in.opc) {
      case Opc::mov: need((t.lanes == 1 && !t.bf16 && t.bits >= 16) || t.kind == Kind::pred, "type"); break;
      case Opc::and_:
      case Opc::or_:
      case Opc::xor_:
      case Opc::not_:
      case Opc::cnot:
        need((t.kind == Kind::b && t.bits >= 16) || t.kind == Kind::pred, "type (.b16/.b32/.b64/.pred)");
        break;
      case Opc::shl: need(t.kind == Kind::b && t.bits >= 16, "type (.b16/.b32/.b64)"); break;
      case Opc::shr: need(integer && t.bits >= 16, "type"); break;
      case Opc::shf:
        need(t.kind == Kind::b && t.bits == 32 && !in.cmp.empty(), "shf.{l,r}.{wrap,clamp}.b32");
        break;
      case Opc::prmt:
      case Opc::lop3: need(t.kind == Kind::b && t.bits == 32, "type (.b32)"); break;
      case Opc::add:
      case Opc::sub:
        need((integer && t.bits >= 16 && (!in.sat || (t.kind == Kind::s && t.bits == 32))) || scalar_float,
             "type");
        need(!in.relu && !in.satfinite, "modifier");
        break;
      case Opc::mul:
      case Opc::mad:
        if (integer) {
          need(t.kind != Kind::b && t.bits >= 16 && in.mode != 0 && !in.sat,
               "integer mul/mad need .lo/.hi/.wide");
          need(in.mode != 'w' || t.bits <= 32, ".wide is for 16- and 32-bit types");
        } else {
          need(scalar_float && in.mode == 0 && !in.relu && !in.satfinite, "type");
          need(in.opc == Opc::mul || in.rnd_set || t.bits == 32, "mad.f64 needs .rn");
        }
        break;
      case Opc::fma:
        need(scalar_float && in.rnd_set && !in.relu && !in.satfinite, "fma.rn.f32 / fma.rn.f64");
        break;
      case Opc::div:
        need(scalar_float && in.rnd_set && !in.sat && !in.relu && !in.satfinite, "div.rn.f32 / div.rn.f64");
        break;
      case Opc::min:
      case Opc::max: need((integer && t.kind != Kind::b && t.bits >= 16) || scalar_float, "type"); break;
      case Opc::neg:
      case Opc::abs: need((t.kind == Kind::s && t.bits >= 16) || scalar_float, "type"); break;
      case Opc::setp:
        need(!in.cmp.empty(), "comparison");
        need((integer && t.bits >= 16) || scalar_float, "type");
        need(t.kind != Kind::b || in.cmp == "eq" || in.cmp == "ne", ".b types compare eq/ne only");
        break;
      case Opc::selp: need((integer && t.bits >= 16) || scalar_float, "type"); break;
      case Opc::cvt: check_cvt(in, name); break;
    }
  }

  static void check_cvt(const Instr& in, std::string_view name) {
    const Type &d = in.t, &s = in.t2;
    auto need = [&](bool ok, const char* why) {
      if (!ok) unsupported(name, why);
    };
    const bool d_int = d.kind != Kind::f && d.kind != Kind::pred,
               s_int = s.kind != Kind::f && s.kind != Kind::pred;
    need(d.kind != Kind::pred && s.kind != Kind::pred, "type");
    if (s.fp8) {
      need(s.fp8 && d.kind == Kind::f && d.lanes == 2 && !d.bf16 && !d.fp8 && in.rnd_set && in.rnd == 'n' &&
               !in.int_rnd,
           "cvt.rn.f16x2.{e4m3x2,e5m2x2}");
    } else if (d.lanes == 2) {
      // §9.7.9.21: cvt.frnd2{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b and
      // cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.{f32 a, b | f16x2 a}
      need(in.rnd_set && !in.int_rnd && (in.rnd == 'n' || (in.rnd == 'z' && d.fp8 == 0)), "rounding");
      need(s.kind == Kind::f &&
               ((s.bits == 32 && s.lanes == 1) || (d.fp8 && s.lanes == 2 && !s.bf16 && !s.fp8)),
           "source type");
      need(!d.fp8 || in.satfinite, "fp8 conversions need .satfinite");
      need(!in.sat && !in.ftz, "modifier");
    } else if (s.lanes == 2 || d.lanes == 2) {
      unsupported(name, "type");
    } else if (d.kind == Kind::f && s.kind == Kind::f) {
      const bool widen = d.bits > s.bits || (d.bits == s.bits && d.bf16 == s.bf16);
      need(widen ? !in.rnd_set || in.int_rnd : in.rnd_set && !in.int_rnd && (in.rnd == 'n' || in.rnd == 'z'),
           "rounding (.rn or .rz when narrowing; .rni... integer rounding is not supported)");
      need(!in.satfinite || d.bits == 16, "modifier");
      need(!in.ftz || s.bits == 32 || d.bits == 32, "modifier");
    } else if (d_int && s_int) {
      need(!in.rnd_set && !in.sat && !in.relu && !in.satfinite, "modifier");
    } else if (d.kind == Kind::f) {  // int -> float
      need(in.rnd_set && in.rnd == 'n' && !in.int_rnd && !d.bf16 && d.bits >= 32 && !in.sat && !in.relu,
           "cvt.rn.{f32,f64}.{s,u}{8,16,32,64}");
    } else {  // float -> int: rounds to an integer, saturating (§9.7.9.21)
      need(in.rnd_set && in.int_rnd && s.bits >= 16 && !in.relu && !in.satfinite,
           "float to integer needs .rni/.rzi/.rmi/.rpi");
    }
  }

  static void check_operands(const Instr& in, std::string_view st) {
    auto count = [&](size_t n) {
      if (in.ops.size() != n)
        throw Error(fmt::format("PTX instruction '{}' takes {} operands, not {}", st, n, in.ops.size()));
    };
    switch (in.opc) {
      case Opc::mov:
      case Opc::not_:
      case Opc::cnot:
      case Opc::neg:
      case Opc::abs: count(2); break;
      case Opc::cvt: count(in.t.lanes == 2 && in.t2.lanes == 1 ? 3 : 2); break;
      case Opc::and_:
      case Opc::or_:
      case Opc::xor_:
      case Opc::shl:
      case Opc::shr:
      case Opc::add:
      case Opc::sub:
      case Opc::mul:
      case Opc::min:
      case Opc::max:
      case Opc::div:
      case Opc::setp: count(3); break;
      case Opc::mad:
      case Opc::fma:
      case Opc::selp:
      case Opc::prmt:
      case Opc::shf: count(4); break;
      case Opc::lop3: count(5); break;
    }
    if (in.ops[0].k == Operand::K::imm)
      throw Error(fmt::format("PTX instruction '{}' writes an immediate", st));
    for (size_t i = 0; i < in.ops.size(); ++i)
      if (in.ops[i].k == Operand::K::vec &&
          !(in.opc == Opc::mov && (in.ops[0].k == Operand::K::vec) != (in.ops[1].k == Operand::K::vec)))
        throw Error(fmt::format("vector operands are supported in mov only, one side: '{}'", st));
    if (in.opc == Opc::lop3 && in.ops[4].k != Operand::K::imm)
      throw Error(fmt::format("lop3's lookup table must be an immediate: '{}'", st));
  }
};

// ---------------------------------------------------------------------------------------------
// Evaluation

uint64_t mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
int64_t sext(uint64_t v, int bits) {
  return bits >= 64 ? static_cast<int64_t>(v) : static_cast<int64_t>(v << (64 - bits)) >> (64 - bits);
}

constexpr uint32_t kCanonicalNaN32 = 0x7FFFFFFF;  // §9.7.3: NaN results are the canonical NaN
constexpr uint64_t kCanonicalNaN64 = 0x7FFFFFFFFFFFFFFF;

struct Vm {
  uint64_t* r;

  // An operand's bits at `bits` width; a float immediate written in decimal takes the type's format.
  uint64_t get(const Operand& o, int bits, bool is_float = false) const {
    if (o.k == Operand::K::imm) {
      if (o.imm_float || is_float) {
        double v = o.imm_float ? o.imm_value : static_cast<double>(static_cast<int64_t>(o.imm));
        if (o.imm_float && !is_float) return o.imm & mask(bits);  // 0f bits used as an integer
        return bits == 64 ? std::bit_cast<uint64_t>(v) : std::bit_cast<uint32_t>(static_cast<float>(v));
      }
      return o.imm & mask(bits);
    }
    return r[o.reg] & mask(bits);
  }
  void set(const Operand& o, uint64_t v, int bits) const { r[o.reg] = v & mask(bits); }
};

double to_double(uint64_t v, int bits) {
  return bits == 64 ? std::bit_cast<double>(v)
                    : static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(v)));
}
uint64_t from_double(double x, int bits) {
  if (std::isnan(x)) return bits == 64 ? kCanonicalNaN64 : kCanonicalNaN32;
  return bits == 64 ? std::bit_cast<uint64_t>(x) : std::bit_cast<uint32_t>(static_cast<float>(x));
}
// .ftz (§9.7.3): subnormal f32 inputs and results are flushed to sign-preserving zero.
double ftz(double x, bool on) {
  if (on && x != 0 && std::fabs(x) < static_cast<double>(std::numeric_limits<float>::min()))
    return std::copysign(0.0, x);
  return x;
}

ir::Elem elem_of(const Type& t) {
  if (t.fp8) return t.fp8 == 4 ? ir::Elem::f8e4m3fn : ir::Elem::f8e5m2;
  if (t.bits == 16) return t.bf16 ? ir::Elem::bf16 : ir::Elem::f16;
  return t.bits == 64 ? ir::Elem::f64 : ir::Elem::f32;
}

// One narrowing float conversion of an exact value (§9.7.9.21): .relu clamps negatives (and -0) to
// +0 and keeps NaN as NaN; .satfinite turns +-inf / overflow into +-max finite and NaN into NaN.
uint64_t narrow(double v, const Type& d, const Instr& in) {
  const ir::Elem e = elem_of(d);
  if (in.relu && !std::isnan(v) && (v < 0 || (v == 0 && std::signbit(v)))) v = 0;
  uint64_t bits = ir::float_to_bits(e, v, in.rnd == 'z' ? ir::Rounding::rtz : ir::Rounding::rtne);
  if (in.satfinite && !std::isnan(v) && (e == ir::Elem::f16 || e == ir::Elem::bf16)) {
    const uint64_t max_finite = e == ir::Elem::f16 ? 0x7BFF : 0x7F7F;
    if ((bits & 0x7FFF) > max_finite) bits = (bits & 0x8000) | max_finite;
  }
  if (e == ir::Elem::f32 && std::isnan(v)) bits = kCanonicalNaN32;
  return bits;
}

double decode(const Type& t, uint64_t bits) { return ir::float_from_bits(elem_of(t), bits); }

void cvt(const Vm& vm, const Instr& in) {
  const Type &d = in.t, &s = in.t2;
  if (s.fp8) {  // cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a: exact widening of each byte
    Type lane = s;
    lane.lanes = 1;
    uint64_t x = vm.get(in.ops[1], 16);
    uint64_t hi = ir::float_to_bits(ir::Elem::f16, decode(lane, x >> 8));
    uint64_t lo = ir::float_to_bits(ir::Elem::f16, decode(lane, x & 0xFF));
    vm.set(in.ops[0], (hi << 16) | lo, 32);
    return;
  }
  if (d.lanes == 2) {
    const int w = d.bits;
    double a, b;  // a goes to the upper half of d, b to the lower (§9.7.9.21)
    if (s.lanes == 2) {
      uint64_t x = vm.get(in.ops[1], 32);
      a = decode({Kind::f, 16}, x >> 16), b = decode({Kind::f, 16}, x & 0xFFFF);
    } else {
      a = ftz(to_double(vm.get(in.ops[1], 32, true), 32), in.ftz),
      b = ftz(to_double(vm.get(in.ops[2], 32, true), 32), in.ftz);
    }
    Type lane = d;
    lane.lanes = 1;
    vm.set(in.ops[0], (narrow(a, lane, in) << w) | narrow(b, lane, in), 2 * w);
    return;
  }
  const bool d_int = d.kind != Kind::f, s_int = s.kind != Kind::f;
  uint64_t x = vm.get(in.ops[1], s.bits, !s_int);
  if (d_int && s_int) {  // sign- or zero-extend from the source width, then truncate
    uint64_t v = s.kind == Kind::s ? static_cast<uint64_t>(sext(x, s.bits)) : x;
    vm.set(in.ops[0], v, d.bits);
  } else if (!d_int && s_int) {
    double v;
    if (s.bits == 64) {  // one rounding, straight to the destination format
      const bool neg = s.kind == Kind::s;
      v = d.bits == 64 ? (neg ? static_cast<double>(static_cast<int64_t>(x)) : static_cast<double>(x))
                       : static_cast<double>(neg ? static_cast<float>(static_cast<int64_t>(x))
                                                 : static_cast<float>(x));
    } else {
      v = s.kind == Kind::s ? static_cast<double>(sext(x, s.bits)) : static_cast<double>(x);
    }
    vm.set(in.ops[0], from_double(v, d.bits), d.bits);
  } else if (d_int) {  // float -> integer: round, NaN -> 0, saturate to the destination range
    double v = ftz(decode(s, x), in.ftz);
    switch (in.rnd) {
      case 'n': v = std::nearbyint(v); break;  // the default FP environment rounds to nearest even
      case 'z': v = std::trunc(v); break;
      case 'm': v = std::floor(v); break;
      default: v = std::ceil(v); break;
    }
    uint64_t out;
    if (std::isnan(v)) {
      out = 0;
    } else if (d.kind == Kind::s) {
      const double lo = -std::ldexp(1.0, d.bits - 1), hi = std::ldexp(1.0, d.bits - 1);
      out = v <= lo   ? static_cast<uint64_t>(std::numeric_limits<int64_t>::min() >> (64 - d.bits))
            : v >= hi ? mask(d.bits - 1)
                      : static_cast<uint64_t>(static_cast<int64_t>(v));
    } else {
      const double hi = std::ldexp(1.0, d.bits);
      out = v <= 0 ? 0 : v >= hi ? mask(d.bits) : static_cast<uint64_t>(v);
    }
    vm.set(in.ops[0], out, d.bits);
  } else {  // float -> float
    double v = ftz(decode(s, x), in.ftz && s.bits == 32);
    uint64_t out;
    if (d.bits == 64) {
      out = std::isnan(v) ? kCanonicalNaN64 : std::bit_cast<uint64_t>(v);
    } else {
      out = narrow(v, d, in);
      if (d.bits == 32 && in.ftz)
        out = std::bit_cast<uint32_t>(static_cast<float>(ftz(to_double(out, 32), true)));
    }
    if (in.sat && !std::isnan(v)) out = from_double(std::clamp(to_double(out, d.bits), 0.0, 1.0), d.bits);
    if (in.sat && std::isnan(v)) out = 0;
    vm.set(in.ops[0], out, d.bits);
  }
}

// §9.7.3.1 add / sub / mul / fma / mad for f32 and f64, rounded to nearest even.
void float_arith(const Vm& vm, const Instr& in) {
  const int w = in.t.bits;
  auto arg = [&](int i) { return ftz(to_double(vm.get(in.ops[i], w, true), w), in.ftz && w == 32); };
  double a = arg(1), b = arg(2), v = 0;
  switch (in.opc) {
    case Opc::add:
      v = w == 64 ? a + b : static_cast<double>(static_cast<float>(a) + static_cast<float>(b));
      break;
    case Opc::sub:
      v = w == 64 ? a - b : static_cast<double>(static_cast<float>(a) - static_cast<float>(b));
      break;
    case Opc::mul:
      v = w == 64 ? a * b : static_cast<double>(static_cast<float>(a) * static_cast<float>(b));
      break;
    case Opc::div:  // §9.7.3.8 div.rn: IEEE 754 division, rounded to nearest even
      v = w == 64 ? a / b : static_cast<double>(static_cast<float>(a) / static_cast<float>(b));
      break;
    default: {  // fma, mad.f32 (= fma.rn.f32 on sm_20+, §9.7.3.5): one rounding
      double c = arg(3);
      v = w == 64 ? std::fma(a, b, c)
                  : static_cast<double>(
                        std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
    }
  }
  v = ftz(v, in.ftz && w == 32);
  if (in.sat) v = std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 1.0);  // .sat: [0, 1], NaN -> +0
  vm.set(in.ops[0], from_double(v, w), w);
}

// §9.7.3.10-11 min / max (f32, f64): a NaN operand yields the other; two NaNs the canonical NaN;
// -0.0 is less than +0.0.
double fminmax(double a, double b, bool is_max) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return (std::signbit(a) != is_max) ? a : b;
  return (a < b) != is_max ? a : b;
}

bool compare(const std::string& c, const Type& t, uint64_t x, uint64_t y, bool ftz_on) {
  if (t.kind == Kind::f) {
    double a = ftz(to_double(x, t.bits), ftz_on), b = ftz(to_double(y, t.bits), ftz_on);
    const bool un = std::isnan(a) || std::isnan(b);
    if (c == "num") return !un;
    if (c == "nan") return un;
    const bool u = c.size() == 3 && c[2] == 'u';  // equ, neu, ltu ...: true when unordered
    if (un) return u;
    const std::string_view k = std::string_view(c).substr(0, 2);
    if (k == "eq") return a == b;
    if (k == "ne") return a != b;
    if (k == "lt") return a < b;
    if (k == "le") return a <= b;
    if (k == "gt") return a > b;
    return a >= b;
  }
  if (t.kind == Kind::s) {
    int64_t a = sext(x, t.bits), b = sext(y, t.bits);
    if (c == "eq") return a == b;
    if (c == "ne") return a != b;
    if (c == "lt") return a < b;
    if (c == "le") return a <= b;
    if (c == "gt") return a > b;
    if (c == "ge") return a >= b;
  }
  // unsigned and bit types; lt/le/gt/ge on .u types mean lo/ls/hi/hs (§9.7.7.1)
  if (c == "eq") return x == y;
  if (c == "ne") return x != y;
  if (c == "lt" || c == "lo") return x < y;
  if (c == "le" || c == "ls") return x <= y;
  if (c == "gt" || c == "hi") return x > y;
  return x >= y;  // ge, hs
}

// Integer multiply, the low, high or wide part (§9.7.1.3), of N-bit a and b.
uint64_t int_mul(uint64_t a, uint64_t b, const Type& t, char mode) {
  const int n = t.bits;
  using u128 = unsigned __int128;
  using s128 = __int128;
  u128 p = t.kind == Kind::s
               ? static_cast<u128>(static_cast<s128>(sext(a, n)) * static_cast<s128>(sext(b, n)))
               : static_cast<u128>(a) * static_cast<u128>(b);
  if (mode == 'h') return static_cast<uint64_t>(p >> n) & mask(n);
  return static_cast<uint64_t>(p) & mask(mode == 'w' ? 2 * n : n);
}

void step(const Vm& vm, const Instr& in) {
  const Type& t = in.t;
  const int w = t.bits * t.lanes;
  const bool is_f = t.kind == Kind::f;
  auto g = [&](int i) { return vm.get(in.ops[i], w, is_f); };
  switch (in.opc) {
    case Opc::mov: {  // §9.7.9.9: vector operands pack / unpack element 0 in the low bits
      const Operand &d = in.ops[0], &s = in.ops[1];
      if (d.k == Operand::K::vec) {
        const int ew = w / static_cast<int>(d.regs.size());
        uint64_t x = g(1);
        for (size_t i = 0; i < d.regs.size(); ++i) vm.r[d.regs[i]] = (x >> (i * ew)) & mask(ew);
      } else if (s.k == Operand::K::vec) {
        const int ew = w / static_cast<int>(s.regs.size());
        uint64_t x = 0;
        for (size_t i = 0; i < s.regs.size(); ++i) x |= (vm.r[s.regs[i]] & mask(ew)) << (i * ew);
        vm.set(d, x, w);
      } else {
        vm.set(d, g(1), w);
      }
      return;
    }
    case Opc::cvt: cvt(vm, in); return;
    case Opc::and_: vm.set(in.ops[0], g(1) & g(2), w); return;  // §9.7.8.1-4
    case Opc::or_: vm.set(in.ops[0], g(1) | g(2), w); return;
    case Opc::xor_: vm.set(in.ops[0], g(1) ^ g(2), w); return;
    case Opc::not_: vm.set(in.ops[0], ~g(1), w); return;
    case Opc::cnot: vm.set(in.ops[0], g(1) == 0 ? 1 : 0, w); return;
    case Opc::shl:    // §9.7.8.7: the shift amount is an unsigned 32-bit value; amounts >= N give 0
    case Opc::shr: {  // §9.7.8.8: .s fills with the sign bit, .b/.u with zeros
      uint64_t a = g(1), n = vm.get(in.ops[2], 32);
      uint64_t v;
      if (in.opc == Opc::shl)
        v = n >= static_cast<uint64_t>(w) ? 0 : a << n;
      else if (t.kind == Kind::s)
        v = static_cast<uint64_t>(sext(a, w) >> std::min<uint64_t>(n, 63));
      else
        v = n >= static_cast<uint64_t>(w) ? 0 : a >> n;
      vm.set(in.ops[0], v, w);
      return;
    }
    case Opc::shf: {  // §9.7.8.6 funnel shift of the 64-bit b:a; .wrap: n mod 32, .clamp: min(n, 32)
      uint64_t a = g(1), b = g(2), c = vm.get(in.ops[3], 32);
      uint64_t n = in.wrap ? c & 31 : std::min<uint64_t>(c, 32);
      uint64_t x = (b << 32) | a;
      vm.set(in.ops[0], in.cmp == "l" ? (x << n) >> 32 : x >> n, 32);
      return;
    }
    case Opc::prmt: {  // §9.7.9.7 default mode: byte i of d = byte c[4i+2:4i] of {b, a}; c[4i+3] replicates
                       // its sign
      uint64_t bytes = (g(2) << 32) | g(1), c = g(3), d = 0;
      for (int i = 0; i < 4; ++i) {
        uint64_t sel = (c >> (4 * i)) & 0xF;
        uint64_t byte = (bytes >> (8 * (sel & 7))) & 0xFF;
        if (sel & 8) byte = (byte & 0x80) ? 0xFF : 0;
        d |= byte << (8 * i);
      }
      vm.set(in.ops[0], d, 32);
      return;
    }
    case Opc::lop3: {  // §9.7.8.5: bit k of d = bit (a_k << 2 | b_k << 1 | c_k) of immLut
      uint64_t a = g(1), b = g(2), c = g(3), lut = vm.get(in.ops[4], 8), d = 0;
      for (int k = 0; k < 32; ++k) {
        uint64_t idx = (((a >> k) & 1) << 2) | (((b >> k) & 1) << 1) | ((c >> k) & 1);
        d |= ((lut >> idx) & 1) << k;
      }
      vm.set(in.ops[0], d, 32);
      return;
    }
    case Opc::add:
    case Opc::sub:
      if (is_f) return float_arith(vm, in);
      if (in.sat) {  // add.sat.s32 / sub.sat.s32: clamp to [INT32_MIN, INT32_MAX] (§9.7.1.1)
        int64_t a = sext(g(1), 32), b = sext(g(2), 32);
        int64_t v = std::clamp<int64_t>(in.opc == Opc::add ? a + b : a - b, INT32_MIN, INT32_MAX);
        vm.set(in.ops[0], static_cast<uint64_t>(v), 32);
      } else {
        vm.set(in.ops[0], in.opc == Opc::add ? g(1) + g(2) : g(1) - g(2), w);
      }
      return;
    case Opc::mul:
    case Opc::mad: {
      if (is_f) return float_arith(vm, in);
      const int dw = in.mode == 'w' ? 2 * w : w;
      uint64_t v = int_mul(g(1), g(2), t, in.mode);
      if (in.opc == Opc::mad) v += vm.get(in.ops[3], dw);
      vm.set(in.ops[0], v, dw);
      return;
    }
    case Opc::fma:
    case Opc::div: float_arith(vm, in); return;
    case Opc::min:
    case Opc::max: {
      const bool is_max = in.opc == Opc::max;
      if (is_f) {
        double a = ftz(to_double(g(1), w), in.ftz), b = ftz(to_double(g(2), w), in.ftz);
        vm.set(in.ops[0], from_double(fminmax(a, b, is_max), w), w);
      } else if (t.kind == Kind::s) {
        int64_t a = sext(g(1), w), b = sext(g(2), w);
        vm.set(in.ops[0], static_cast<uint64_t>(is_max ? std::max(a, b) : std::min(a, b)), w);
      } else {
        vm.set(in.ops[0], is_max ? std::max(g(1), g(2)) : std::min(g(1), g(2)), w);
      }
      return;
    }
    case Opc::neg:    // §9.7.1.10 / §9.7.3.9: floats flip the sign bit; a NaN gives the canonical NaN
    case Opc::abs: {  // (measured on an H200: tests/gpu/data/ptx_truth.json, neg_f32 / abs_f32)
      const uint64_t a = g(1);
      uint64_t v;
      if (is_f)
        v = std::isnan(to_double(a, w)) ? from_double(std::numeric_limits<double>::quiet_NaN(), w)
            : in.opc == Opc::neg        ? a ^ (uint64_t{1} << (w - 1))
                                        : a & mask(w - 1);
      else
        v = in.opc == Opc::neg || sext(a, w) < 0 ? ~a + 1 : a;
      vm.set(in.ops[0], v, w);
      return;
    }
    case Opc::setp: vm.set(in.ops[0], compare(in.cmp, t, g(1), g(2), in.ftz) ? 1 : 0, 1); return;
    case Opc::selp: vm.set(in.ops[0], (vm.get(in.ops[3], 1) & 1) ? g(1) : g(2), w); return;
  }
}

Program parse_text(std::string_view asm_text, const std::vector<int>& operand_bits) {
  Parser p;
  p.prog.num_operands = static_cast<int>(operand_bits.size());
  p.prog.num_regs = p.prog.num_operands;
  p.prog.reg_bits = operand_bits;
  const std::string text = strip_comments(asm_text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t semi = text.find(';', pos);
    std::string_view st(text.data() + pos, (semi == std::string::npos ? text.size() : semi) - pos);
    pos = semi == std::string::npos ? text.size() : semi + 1;
    // `{` and `}` open and close scopes (§11.1); registers declared inside are function-wide here.
    st = trim(st);
    while (!st.empty() && (st.front() == '{' || st.front() == '}')) st = trim(st.substr(1));
    if (st.empty()) continue;
    if (semi == std::string::npos) throw Error(fmt::format("PTX statement '{}' does not end with ';'", st));
    if (st.starts_with(".reg")) {
      p.declare(st);
    } else if (st.front() == '.') {
      Parser::unsupported(st.substr(0, st.find_first_of(" \t\n")), "directive");
    } else if (st == "griddepcontrol.wait" || st == "griddepcontrol.launch_dependents") {
      // Programmatic dependent launch (tl.extra.cuda.gdc_wait / gdc_launch_dependents): tilescope runs
      // launches one after another, each to completion, so every earlier grid has completed and its
      // writes are visible when a program starts (nothing to wait for), and launching dependents early
      // is a scheduling hint. Both do nothing here.
    } else {
      p.instruction(st);
    }
  }
  return p.prog;
}

}  // namespace

Program parse(std::string_view asm_text, const std::vector<int>& operand_bits) {
  try {
    return parse_text(asm_text, operand_bits);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // std::stoull / std::stod on a malformed or huge immediate
    throw Error(fmt::format("malformed PTX immediate ({})", e.what()));
  }
}

void run(const Program& p, uint64_t* regs) {
  Vm vm{regs};
  for (const Instr& in : p.code) {
    if (in.guard >= 0 && ((regs[in.guard] & 1) != 0) == in.guard_neg) continue;
    step(vm, in);
  }
}

}  // namespace tilescope::ops::ptx
