#include "args.h"

#include <fmt/format.h>

#include <cassert>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <regex>

#include "npy.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/ir.h"

namespace tilescope::cli {
namespace {

using ir::Elem;

// An integer as Python's int() reads it: an optional sign, then decimal digits (leading zeros are
// still decimal) or 0x / 0o / 0b and digits of that base. Its magnitude and sign, or nullopt when
// the text is not such a number; `too_big` when the magnitude exceeds 64 bits.
struct IntText {
  uint64_t magnitude = 0;
  bool negative = false, sign = false;
};
std::optional<IntText> read_int(const std::string& s, bool& too_big) {
  too_big = false;
  IntText r;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    r.sign = true;
    r.negative = s[i] == '-';
    ++i;
  }
  int base = 10;
  if (s.size() - i > 2 && s[i] == '0') {
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + 1])));
    base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 10;
    if (base != 10) i += 2;
  }
  const char* first = s.data() + i;
  const char* last = s.data() + s.size();
  if (first == last) return std::nullopt;
  auto [ptr, ec] = std::from_chars(first, last, r.magnitude, base);
  if (ec == std::errc::result_out_of_range) {
    // from_chars stops at the first non-digit even when out of range: the text is still a number
    // only if it reached the end.
    const char* p = first;
    while (p != last && std::isxdigit(static_cast<unsigned char>(*p))) ++p;
    if (p != last) return std::nullopt;
    too_big = true;
    return r;
  }
  if (ec != std::errc() || ptr != last) return std::nullopt;
  return r;
}

// A float in strtod's syntax (no leading space): the value, or nullopt when the text is not one;
// `overflow` when its magnitude is beyond double's range (strtod's HUGE_VAL with ERANGE). A value
// that underflows is kept: strtod gives the nearest subnormal or zero.
std::optional<double> read_double(const std::string& s, bool& overflow) {
  overflow = false;
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  if (errno == ERANGE && std::isinf(v)) overflow = true;
  return v;
}

// Whether the finite `v` rounds (to nearest even) to a finite value of float type `e`: below the
// largest finite value plus half of its last step, where the rounding carries past it. For formats
// without an infinity (f8E4M3FN, the fnuz ones) the same bound applies, although the conversion
// saturates there.
bool fits_float(Elem e, double v) {
  if (e == Elem::f64) return std::isfinite(v);
  const uint64_t max_bits = ir::float_to_bits(e, DBL_MAX, ir::Rounding::rtz);  // rtz: the largest finite
  const double max = ir::float_from_bits(e, max_bits);
  const double step = max - ir::float_from_bits(e, max_bits - 1);
  return std::fabs(v) < max + step / 2;
}

// Whether `v` (magnitude and sign) lies in the signed or the unsigned range of a `bits`-wide
// integer (TTIR is signless: launch::bind accepts either).
bool fits_int(const IntText& v, int bits) {
  if (bits >= 64) return !v.negative || v.magnitude <= uint64_t{1} << 63;
  if (v.negative) return v.magnitude <= uint64_t{1} << (bits - 1);
  return v.magnitude < uint64_t{1} << bits;
}

std::string elem_text(Elem e) { return ir::elem_name(e); }

// Writes one element of `e`: floats from `f`, integers (and i1, pointer addresses) from `bits`.
void store(std::byte* p, Elem e, double f, uint64_t bits) {
  switch (e) {
    case Elem::f32: {
      float x = static_cast<float>(f);
      std::memcpy(p, &x, 4);
      break;
    }
    case Elem::f64: std::memcpy(p, &f, 8); break;
    case Elem::f16:
    case Elem::bf16: {
      uint16_t b = static_cast<uint16_t>(ir::float_to_bits(e, f));
      std::memcpy(p, &b, 2);
      break;
    }
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz: {
      uint8_t b = static_cast<uint8_t>(ir::float_to_bits(e, f));
      std::memcpy(p, &b, 1);
      break;
    }
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::ptr: {  // a pointer-to-pointer buffer holds integer addresses
      if (e == Elem::i1) bits = bits != 0;
      std::memcpy(p, &bits, static_cast<size_t>(ir::elem_bytes(e)));  // little-endian: the low bytes
      break;
    }
    case Elem::tensordesc:
    case Elem::none:  // no storage: run() rejects `none` pointees, the reader pointers to descriptors
      assert(false && "a buffer's elements have storage");
      break;
  }
}

// `[DTYPE][SHAPE]:GEN`, GEN = zeros | ones | randn | rand | arange | full=V
HostBuffer generate(const std::string& name, const std::string& spec, Elem pointee, std::mt19937_64& rng) {
  static const std::regex re(R"(^([A-Za-z0-9]*)\[([0-9x, ]*)\]:([a-z]+)(=(.*))?$)");
  std::smatch m;
  if (!std::regex_match(spec, m, re))
    throw Error(fmt::format(
        "--arg {}={}: expected DTYPE[SHAPE]:GEN (e.g. f32[64x32]:randn), a .npy path, or TYPE:VALUE", name,
        spec));
  HostBuffer b;
  b.elem = pointee;
  if (!m[1].str().empty()) {
    auto e = ir::elem_from_name(m[1].str());
    if (!e)
      throw Error(fmt::format("--arg {}: unknown dtype '{}' ({})", name, m[1].str(), ir::elem_names_help()));
    if (ir::elem_bytes(*e) != ir::elem_bytes(pointee))
      throw Error(fmt::format("--arg {}: dtype {} does not match the kernel's pointer type {}", name,
                              m[1].str(), ir::elem_name(pointee)));
    b.elem = *e;
  }
  std::string dims = m[2];
  static const std::regex shape_re(R"(^[0-9]+([x,][0-9]+)*$)");
  if (!std::regex_match(dims, shape_re))
    throw Error(
        fmt::format("--arg {}: shape '[{}]' must be sizes separated by 'x' (e.g. [64x32])", name, dims));
  // Every size is read and the product checked for overflow, even after a 0 (a typo is still one).
  uint64_t n = 1;
  bool overflow = false;
  static const std::regex num("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    bool too_big = false;
    std::optional<IntText> d = read_int(it->str(), too_big);
    assert(d && "the shape regex admits decimal digits only");
    overflow |= too_big || d->magnitude > static_cast<uint64_t>(INT64_MAX);
    b.shape.push_back(static_cast<int64_t>(d->magnitude));
    overflow |= __builtin_mul_overflow(n, d->magnitude, &n);
  }
  if (overflow || n > static_cast<uint64_t>(INT64_MAX))
    throw Error(
        fmt::format("--arg {}: shape [{}] has more elements than a 64-bit count can hold", name, dims));
  const uint64_t eb = static_cast<uint64_t>(ir::elem_bytes(b.elem));
  constexpr uint64_t kMaxBytes = uint64_t{1} << 36;  // 64 GiB: a typo, not a buffer
  if (n > kMaxBytes / eb)
    throw Error(
        fmt::format("--arg {}: shape [{}] is {} elements of {} bytes, more than the 64 GiB a generated "
                    "buffer may take",
                    name, dims, n, eb));
  try {
    b.data.assign(static_cast<size_t>(n * eb), std::byte{0});
  } catch (const std::bad_alloc&) {
    throw Error(fmt::format("--arg {}: cannot allocate {} bytes for shape [{}]", name, n * eb, dims));
  }
  std::string gen = m[3];
  const bool fl = ir::is_float(b.elem);
  double full = 0;
  uint64_t full_bits = 0;
  if (gen == "full") {
    if (!m[5].matched) throw Error(fmt::format("--arg {}: full needs a value (full=1.5)", name));
    const std::string text = m[5];
    bool out_of_range = false;
    if (fl) {
      std::optional<double> v = read_double(text, out_of_range);
      if (!v) throw Error(fmt::format("--arg {}: full={} is not a number", name, text));
      if (out_of_range || (std::isfinite(*v) && !fits_float(b.elem, *v)))
        throw Error(fmt::format("--arg {}: full={} does not fit in {}", name, text, elem_text(b.elem)));
      full = *v;
    } else {
      std::optional<IntText> v = read_int(text, out_of_range);
      if (!v)
        throw Error(fmt::format("--arg {}: full={} is not an integer, and the buffer is {}", name, text,
                                elem_text(b.elem)));
      if (out_of_range || !fits_int(*v, ir::elem_bits(b.elem)))
        throw Error(fmt::format("--arg {}: full={} does not fit in {}", name, text, elem_text(b.elem)));
      full_bits = v->negative ? ~v->magnitude + 1 : v->magnitude;
    }
  }
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  std::function<double(int64_t)> value;
  if (gen == "zeros")
    value = [](int64_t) { return 0.0; };
  else if (gen == "ones")
    value = [](int64_t) { return 1.0; };
  else if (gen == "full")
    value = [full](int64_t) { return full; };
  else if (gen == "arange")
    value = [](int64_t i) { return static_cast<double>(i); };
  else if (gen == "randn")
    value = [&](int64_t) { return fl ? normal(rng) : std::round(normal(rng) * 10); };
  else if (gen == "rand")
    value = [&](int64_t) { return fl ? uniform(rng) : std::floor(uniform(rng) * 100); };
  else
    throw Error(fmt::format("--arg {}: unknown generator '{}' (zeros, ones, randn, rand, arange, full=V)",
                            name, gen));
  if (gen == "zeros") return b;  // the buffer starts zeroed
  const auto count = static_cast<int64_t>(n);
  for (int64_t i = 0; i < count; ++i) {
    const double v = value(i);
    // Integer generators give whole numbers below 2^36 (arange), exact in an int64.
    const uint64_t bits = fl ? 0 : gen == "full" ? full_bits : static_cast<uint64_t>(static_cast<int64_t>(v));
    store(b.data.data() + i * static_cast<int64_t>(eb), b.elem, v, bits);
  }
  return b;
}

HostBuffer from_npy(const std::string& name, const std::string& path, Elem pointee) {
  NpyArray a = read_npy(path);
  if (a.item_bytes() != ir::elem_bytes(pointee))
    throw Error(
        fmt::format("--arg {}: {} holds {}-byte '{}' elements, but the kernel's pointer is to {} ({} bytes)",
                    name, path, a.item_bytes(), a.descr, ir::elem_name(pointee), ir::elem_bytes(pointee)));
  bool float_file = a.descr[1] == 'f', float_ptr = ir::is_float(pointee);
  bool bits_ok = (pointee == Elem::bf16 || pointee == Elem::f8e4m3fn || pointee == Elem::f8e5m2 ||
                  pointee == Elem::f8e4m3fnuz || pointee == Elem::f8e5m2fnuz) &&
                 !float_file;
  if (float_file != float_ptr && !bits_ok && !(pointee == Elem::i8 && a.descr == "|b1"))
    throw Error(fmt::format("--arg {}: {} holds '{}' but the kernel's pointer is to {}", name, path, a.descr,
                            ir::elem_name(pointee)));
  return HostBuffer{pointee, a.shape.empty() ? std::vector<int64_t>{1} : a.shape, std::move(a.data)};
}

}  // namespace

HostBuffer buffer_from_spec(const std::string& name, const std::string& spec, ir::Elem pointee,
                            std::mt19937_64& rng) {
  bool npy = spec.size() > 4 && spec.compare(spec.size() - 4, 4, ".npy") == 0;
  return npy ? from_npy(name, spec, pointee) : generate(name, spec, pointee, rng);
}

launch::Scalar parse_scalar(const std::string& name, const std::string& spec, const ir::Type& t) {
  auto colon = spec.find(':');
  std::string ty = colon == std::string::npos ? "" : spec.substr(0, colon);
  std::string val = colon == std::string::npos ? spec : spec.substr(colon + 1);
  if (!ty.empty()) {
    auto e = ir::elem_from_name(ty);
    if (!e) throw Error(fmt::format("--arg {}: unknown type '{}' ({})", name, ty, ir::elem_names_help()));
    if (ir::elem_bytes(*e) != ir::elem_bytes(t.elem) || ir::is_float(*e) != ir::is_float(t.elem))
      throw Error(fmt::format("--arg {}: {} given, but the kernel's argument is {}", name, ty, t.str()));
  }
  bool out_of_range = false;
  if (ir::is_float(t.elem)) {
    std::optional<double> v = read_double(val, out_of_range);
    if (!v) throw Error(fmt::format("--arg {}: cannot read '{}' as {}", name, val, t.str()));
    if (out_of_range || (std::isfinite(*v) && !fits_float(t.elem, *v)))
      throw Error(fmt::format("--arg {}: {} does not fit in {}", name, val, t.str()));
    return *v;
  }
  if (val == "true") return true;
  if (val == "false") return false;
  std::optional<IntText> v = read_int(val, out_of_range);
  if (!v) throw Error(fmt::format("--arg {}: cannot read '{}' as {}", name, val, t.str()));
  if (out_of_range) throw Error(fmt::format("--arg {}: {} does not fit in {}", name, val, t.str()));
  if (ir::is_unsigned_name(ty)) {
    if (v->sign) throw Error(fmt::format("--arg {}: {} has a sign, but {} is unsigned", name, val, ty));
    return v->magnitude;
  }
  if (v->negative) {
    if (v->magnitude > uint64_t{1} << 63)
      throw Error(fmt::format("--arg {}: {} does not fit in {}", name, val, t.str()));
    return static_cast<int64_t>(~v->magnitude + 1);  // two's complement of the magnitude
  }
  if (v->magnitude > static_cast<uint64_t>(INT64_MAX)) return v->magnitude;  // i64's unsigned range
  return static_cast<int64_t>(v->magnitude);
}

}  // namespace tilescope::cli
