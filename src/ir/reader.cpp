// TTIR reader: a recursive-descent reader for the MLIR text Triton prints (kernel.asm["ttir"] and
// asm["source"]). Custom op forms follow each op's Syntax in the op table (src/ops/table.h), whose
// formats are the ODS assembly formats listed in reference §1-§2; the generic form
// `"name"(ops) <{props}> ({regions}) {attrs} : (T...) -> R` is read for every op. Locations follow
// reference §3.2. Every error is a tilescope::Error "file:line:col: message"; nothing the text says can
// crash the reader or make it loop (recursion is bounded by kMaxDepth).
#include "tilescope/ir/reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "src/ops/table.h"

namespace tilescope::ir {

namespace {

constexpr int kMaxDepth = 256;
constexpr int64_t kMaxNumel = int64_t(1) << 40;  // reader-side sanity bound; verify() applies 2^20

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}
// MLIR suffix-id: [A-Za-z0-9_$.-]+ (reference §0.4: `%c-766435501_i32`, `%foo.x`).
bool is_suffix_char(char c) { return is_ident_char(c) || c == '-'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_val(char c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }

// A location expression, before aliases are resolved (reference §3.2).
struct LocNode {
  enum class K { Unknown, File, Name, CallSite, Fused, Alias } k = K::Unknown;
  std::string s;  // file, name or alias
  int line = 0, col = 0;
  std::vector<int> kids;  // Name: [child]; CallSite: [callee, caller]; Fused: children
  size_t off = 0;
};

// A use of an SSA value as written: `%name` or `%name#idx`.
struct Ref {
  std::string name;
  int idx = -1;
  size_t off = 0;
};

// One piece of a custom op form before the colon.
struct Item {
  enum class K { Operand, Keyword, KwValue, String } k = K::Keyword;
  Ref ref;
  std::string word;
  Attr val;
  size_t off = 0;
};

struct ResultName {
  std::string name;
  int count = 1;
  size_t off = 0;
};

struct Frame {
  std::string file;
  int line = 0, col = 0;
  std::string name;
};

class Reader {
 public:
  Reader(std::string_view text, const std::string& filename, Module& m) : t_(text), file_(filename), m_(m) {
    lines_.push_back(0);
    for (size_t i = 0; i < t_.size(); ++i)
      if (t_[i] == '\n') lines_.push_back(i + 1);
  }

  void run();

 private:
  // ---------------------------------------------------------------- errors and positions
  TextPos pos_of(size_t off) const {
    auto it = std::upper_bound(lines_.begin(), lines_.end(), off);
    size_t line = static_cast<size_t>(it - lines_.begin());
    return TextPos{static_cast<int>(line), static_cast<int>(off - lines_[line - 1] + 1)};
  }
  [[noreturn]] void fail(size_t off, const std::string& msg) const {
    TextPos p = pos_of(std::min(off, t_.size()));
    throw Error(fmt::format("{}:{}:{}: {}", file_, p.line, p.col, msg));
  }
  std::string found() {
    ws();
    if (eof()) return "end of input";
    size_t e = p_;
    if (is_suffix_char(t_[e])) {
      while (e < t_.size() && e - p_ < 24 && is_suffix_char(t_[e])) ++e;
    } else {
      ++e;
    }
    std::string s(t_.substr(p_, e - p_));
    for (char& c : s)
      if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127) c = '?';
    return "'" + s + "'";
  }
  [[noreturn]] void expected(const std::string& what) {
    std::string f = found();
    fail(p_, fmt::format("expected {}, found {}", what, f));
  }

  struct Depth {
    Reader& r;
    Depth(Reader& rr, size_t off) : r(rr) {
      if (++r.depth_ > kMaxDepth) r.fail(off, fmt::format("nesting deeper than {} levels", kMaxDepth));
    }
    ~Depth() { --r.depth_; }
  };

  // ---------------------------------------------------------------- lexing
  bool eof() const { return p_ >= t_.size(); }
  char peek(size_t k = 0) const { return p_ + k < t_.size() ? t_[p_ + k] : '\0'; }
  void ws() {
    while (p_ < t_.size()) {
      char c = t_[p_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++p_;
      } else if (c == '/' && peek(1) == '/') {
        while (p_ < t_.size() && t_[p_] != '\n') ++p_;
      } else {
        break;
      }
    }
  }
  bool accept(char c) {
    ws();
    if (!eof() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* ctx = "") {
    if (!accept(c)) expected(fmt::format("'{}'{}", c, ctx));
  }
  bool accept_arrow() {
    ws();
    if (peek() == '-' && peek(1) == '>') {
      p_ += 2;
      return true;
    }
    return false;
  }
  void expect_arrow() {
    if (!accept_arrow()) expected("'->'");
  }
  bool peek_kw(std::string_view w) {
    ws();
    if (t_.substr(p_, w.size()) != w) return false;
    return !is_ident_char(peek(w.size()));
  }
  bool accept_kw(std::string_view w) {
    if (!peek_kw(w)) return false;
    p_ += w.size();
    return true;
  }
  void expect_kw(std::string_view w) {
    if (!accept_kw(w)) expected(fmt::format("'{}'", w));
  }
  std::string ident(const char* what = "an identifier") {
    ws();
    if (eof() || !is_ident_start(t_[p_])) expected(what);
    size_t s = p_;
    while (p_ < t_.size() && is_ident_char(t_[p_])) ++p_;
    return std::string(t_.substr(s, p_ - s));
  }
  // Suffix-id after '%', '^' or '#': digits, or [A-Za-z_$.-][A-Za-z0-9_$.-]*.
  std::string suffix_id(const char* what) {
    size_t s = p_;
    if (!eof() && is_digit(t_[p_])) {
      while (p_ < t_.size() && is_digit(t_[p_])) ++p_;
    } else {
      while (p_ < t_.size() && is_suffix_char(t_[p_])) ++p_;
    }
    if (p_ == s) expected(what);
    return std::string(t_.substr(s, p_ - s));
  }
  int64_t parse_int(const char* what = "an integer") {
    ws();
    size_t s = p_;
    bool neg = false;
    if (peek() == '-' || peek() == '+') {
      neg = peek() == '-';
      ++p_;
    }
    uint64_t v = 0;
    if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X') && is_hex(peek(2))) {
      p_ += 2;
      int n = 0;
      while (!eof() && is_hex(t_[p_])) {
        if (++n > 16) fail(s, "integer literal out of range");
        v = v * 16 + hex_val(t_[p_++]);
      }
    } else {
      if (!is_digit(peek())) {
        p_ = s;
        expected(what);
      }
      while (!eof() && is_digit(t_[p_])) {
        uint64_t d = t_[p_++] - '0';
        if (v > (UINT64_MAX - d) / 10) fail(s, "integer literal out of range");
        v = v * 10 + d;
      }
    }
    if (neg) {
      if (v > uint64_t(1) << 63) fail(s, "integer literal out of range");
      return static_cast<int64_t>(~v + 1);
    }
    return static_cast<int64_t>(v);
  }
  int small_int(const char* what, int64_t lo, int64_t hi) {
    size_t s = (ws(), p_);
    int64_t v = parse_int(what);
    if (v < lo || v > hi) fail(s, fmt::format("{} {} out of range [{}, {}]", what, v, lo, hi));
    return static_cast<int>(v);
  }
  std::string parse_string() {
    ws();
    size_t s = p_;
    if (peek() != '"') expected("a string");
    ++p_;
    std::string out;
    for (;;) {
      if (eof()) fail(s, "unterminated string");
      char c = t_[p_++];
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (eof()) fail(s, "unterminated string");
      char e = t_[p_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        default:
          // MLIR prints other bytes as two hex digits (`\0A`).
          if (is_hex(e) && is_hex(peek())) {
            out += static_cast<char>(hex_val(e) * 16 + hex_val(t_[p_++]));
          } else {
            fail(p_ - 2, fmt::format("invalid escape '\\{}' in string", e == '\0' ? '0' : e));
          }
      }
    }
    return out;
  }
  // Skip a balanced (), [], {} or <> group starting at the current char; returns its text.
  std::string skip_group() {
    ws();
    size_t s = p_;
    std::string stack;
    do {
      if (eof()) fail(s, fmt::format("unterminated '{}'", t_[s]));
      char c = t_[p_];
      if (c == '"') {
        parse_string();
        continue;
      }
      ++p_;
      if (c == '(' || c == '[' || c == '{' || c == '<') {
        if (stack.size() >= kMaxDepth) fail(p_ - 1, "nesting too deep");
        stack += c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>';
      } else if (c == ')' || c == ']' || c == '}' || (c == '>' && !(p_ >= 2 && t_[p_ - 2] == '-'))) {
        if (stack.empty() || stack.back() != c) fail(p_ - 1, fmt::format("unbalanced '{}'", c));
        stack.pop_back();
      }
    } while (!stack.empty());
    return std::string(t_.substr(s, p_ - s));
  }

  // ---------------------------------------------------------------- types
  const Type* scalar_named(const std::string& n) {
    auto e = elem_from_mlir(n);
    return e ? m_.scalar(*e) : nullptr;
  }
  // Dims `16x32x` then an element type; used by tensor<...> and !tt.tensordesc<16x32xf16>.
  const Type* tensor_body(size_t s) {
    std::vector<int64_t> dims;
    int64_t numel = 1;
    for (;;) {
      ws();
      if (peek() == '?') fail(p_, "dynamic dimensions are not supported in TTIR");
      if (!is_digit(peek())) break;
      size_t d = p_;
      int64_t v = parse_int();
      if (v > (int64_t(1) << 31)) fail(d, fmt::format("tensor dimension {} too large", v));
      numel *= v;
      if (numel > kMaxNumel) fail(d, "tensor has too many elements");
      if (peek() != 'x') expected("'x' after a tensor dimension");
      ++p_;
      if (dims.size() >= 16) fail(d, "tensor rank above 16");
      dims.push_back(v);
    }
    size_t es = (ws(), p_);
    const Type* e = parse_type();
    if (e->is_tensor) fail(es, "tensor element type cannot be a tensor");
    if (e->elem == Elem::tensordesc) fail(es, "tensor of tensor descriptors is not supported");
    ws();
    if (peek() == ',') fail(p_, "tensor encodings (TTGIR layouts) are not supported in TTIR");
    Type t = *e;
    t.is_tensor = true;
    t.shape = std::move(dims);
    (void)s;
    return m_.intern(t);
  }
  // `as_desc`: a stripped `<tensor<..>>` means a !tt.tensordesc (second type of make_tensor_descriptor).
  const Type* parse_type(bool as_desc = false) {
    ws();
    size_t s = p_;
    Depth d(*this, s);
    if (peek() == '<') {  // stripped tt type (reference §3.1)
      ++p_;
      ws();
      if (as_desc && is_digit(peek())) {
        // 3.8+ prints the descriptor as `<16x32xf32>` (no inner tensor<>; seen in triton 3.9.0 TTIR).
        const Type* blk = tensor_body(s);
        expect('>', " closing a stripped tensor descriptor type");
        return m_.desc(blk);
      }
      const Type* in = parse_type();
      expect('>', " closing a stripped type");
      if (as_desc) {
        if (!in->is_tensor) fail(s, "tensor descriptor block type must be a tensor");
        return m_.desc(in);
      }
      return m_.ptr(in);
    }
    if (peek() == '!') {
      ++p_;
      std::string n = ident("a dialect type name");
      if (n == "tt.ptr") {
        expect('<', " after !tt.ptr");
        const Type* in = parse_type();
        if (in->elem == Elem::tensordesc) fail(s, "pointer to a tensor descriptor is not supported");
        int as = 1;
        if (accept(',')) as = small_int("address space", 0, 1 << 20);
        expect('>', " closing !tt.ptr");
        return m_.ptr(in, as);
      }
      if (n == "tt.tensordesc") {
        expect('<', " after !tt.tensordesc");
        ws();
        const Type* blk;
        if (peek_kw("tensor")) {
          blk = parse_type();
          if (!blk->is_tensor) fail(s, "tensor descriptor block type must be a tensor");
        } else {
          blk = tensor_body(s);  // 3.8+ form !tt.tensordesc<16x32xf16[, #layout]>
        }
        ws();
        if (peek() == ',') {  // optional layout: ignored (no semantics in TTIR)
          ++p_;
          ws();
          if (peek() == '#') {
            ++p_;
            suffix_id("a layout alias");
            ws();
            if (peek() == '<') skip_group();
          } else {
            expected("a layout");
          }
        }
        expect('>', " closing !tt.tensordesc");
        return m_.desc(blk);
      }
      fail(s, fmt::format("unsupported type '!{}'", n));
    }
    if (eof() || !is_ident_start(peek())) expected("a type");
    // Read letters/digits only: `f32>` or `i32,` end the name.
    size_t b = p_;
    while (p_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_])) || t_[p_] == '_')) ++p_;
    std::string n(t_.substr(b, p_ - b));
    if (n == "tensor") {
      expect('<', " after tensor");
      const Type* t = tensor_body(s);
      expect('>', " closing tensor<");
      return t;
    }
    if (const Type* t = scalar_named(n)) return t;
    fail(s, fmt::format("unsupported type '{}'", n));
  }
  std::vector<const Type*> type_list() {
    std::vector<const Type*> v{parse_type()};
    while (accept(',')) v.push_back(parse_type());
    return v;
  }
  // `(T, T)` or `()`.
  std::vector<const Type*> paren_types() {
    expect('(');
    std::vector<const Type*> v;
    if (accept(')')) return v;
    v = type_list();
    expect(')', " closing a type list");
    return v;
  }
  // Result types after '->': `(T, ...)`, `()` or a single type.
  std::vector<const Type*> result_types() {
    ws();
    if (peek() == '(') return paren_types();
    return {parse_type()};
  }

  // ---------------------------------------------------------------- attributes
  static int64_t sext(uint64_t v, int bits) {
    if (bits >= 64) return static_cast<int64_t>(v);
    uint64_t m = uint64_t(1) << (bits - 1);
    v &= (uint64_t(1) << bits) - 1;
    return static_cast<int64_t>((v ^ m) - m);
  }
  struct Num {
    bool is_float = false, is_hex = false;
    int64_t i = 0;
    double f = 0;
    size_t off = 0;
  };
  Num parse_number() {
    ws();
    Num n;
    n.off = p_;
    size_t s = p_;
    size_t q = p_;
    if (q < t_.size() && (t_[q] == '-' || t_[q] == '+')) ++q;
    if (q + 1 < t_.size() && t_[q] == '0' && (t_[q + 1] == 'x' || t_[q + 1] == 'X')) {
      n.is_hex = true;
      n.i = parse_int();
      return n;
    }
    while (q < t_.size() && is_digit(t_[q])) ++q;
    bool fl = false;
    if (q < t_.size() && t_[q] == '.') {
      fl = true;
      ++q;
      while (q < t_.size() && is_digit(t_[q])) ++q;
    }
    if (q < t_.size() && (t_[q] == 'e' || t_[q] == 'E')) {
      size_t r = q + 1;
      if (r < t_.size() && (t_[r] == '-' || t_[r] == '+')) ++r;
      if (r < t_.size() && is_digit(t_[r])) {
        fl = true;
        q = r;
        while (q < t_.size() && is_digit(t_[q])) ++q;
      }
    }
    if (!fl) {
      n.i = parse_int("a number");
      return n;
    }
    std::string txt(t_.substr(s, q - s));
    if (!txt.empty() && txt[0] == '+') txt.erase(0, 1);
    double v = 0;
    auto r = std::from_chars(txt.data(), txt.data() + txt.size(), v);
    if (r.ec != std::errc() || r.ptr != txt.data() + txt.size()) fail(s, "malformed float literal");
    n.is_float = true;
    n.f = v;
    p_ = q;
    return n;
  }
  static uint64_t float_bits(Elem e, double v) {
    if (e == Elem::f64) return std::bit_cast<uint64_t>(v);
    if (e == Elem::f32) return std::bit_cast<uint32_t>(static_cast<float>(v));
    return float_to_bits(e, v);
  }
  static double float_value(Elem e, uint64_t bits) {
    if (e == Elem::f64) return std::bit_cast<double>(bits);
    if (e == Elem::f32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
    return float_from_bits(e, bits);
  }
  // A scalar attribute value typed by `t` (a scalar int or float type).
  Attr typed_number(const Num& n, const Type* t) {
    Attr a;
    a.type = t;
    int bits = elem_bits(t->elem);
    if (is_int(t->elem)) {
      if (n.is_float) fail(n.off, fmt::format("float literal for integer type {}", t->str()));
      a.kind = Attr::Kind::Int;
      a.i = t->elem == Elem::i1 ? (n.i & 1) : sext(static_cast<uint64_t>(n.i), bits);
      if (!n.is_hex && bits < 64 && t->elem != Elem::i1 &&
          (n.i < -(int64_t(1) << (bits - 1)) || n.i >= (int64_t(1) << bits)))
        fail(n.off, fmt::format("integer {} does not fit {}", n.i, t->str()));
      return a;
    }
    if (is_float(t->elem)) {
      a.kind = Attr::Kind::Float;
      if (n.is_hex) {
        uint64_t b = static_cast<uint64_t>(n.i);
        if (bits < 64 && (b >> bits) != 0) fail(n.off, fmt::format("hex literal too wide for {}", t->str()));
        a.fbits = b;
        a.f = float_value(t->elem, b);
      } else {
        a.f = n.is_float ? n.f : static_cast<double>(n.i);
        a.fbits = float_bits(t->elem, a.f);
      }
      return a;
    }
    fail(n.off, fmt::format("numeric literal of non-numeric type {}", t->str()));
  }
  // One element of a dense literal, encoded little-endian into `out` (reference: i1 one byte,
  // f16/bf16/fp8 as bits, f32 float, f64 double).
  void dense_elem(const Num* n, int boolv, size_t off, Elem e, std::vector<uint8_t>& out) {
    uint64_t bits = 0;
    if (boolv >= 0) {
      if (!is_int(e)) fail(off, "boolean literal in a non-integer dense attribute");
      bits = static_cast<uint64_t>(boolv);
    } else if (is_int(e)) {
      if (n->is_float) fail(off, "float literal in an integer dense attribute");
      bits = static_cast<uint64_t>(n->i);
      if (e == Elem::i1) bits &= 1;
    } else if (is_float(e)) {
      if (n->is_hex) {
        bits = static_cast<uint64_t>(n->i);
        if (elem_bits(e) < 64 && (bits >> elem_bits(e)) != 0)
          fail(off, "hex literal too wide for the element");
      } else {
        bits = float_bits(e, n->is_float ? n->f : static_cast<double>(n->i));
      }
    } else {
      fail(off, "dense attribute of non-numeric elements");
    }
    for (int k = 0; k < elem_bytes(e); ++k) out.push_back(static_cast<uint8_t>(bits >> (8 * k)));
  }
  struct DenseLit {
    Num n;
    int boolv = -1;
    size_t off;
  };
  void dense_list(std::vector<DenseLit>& out) {
    ws();
    Depth d(*this, p_);
    if (accept('[')) {
      if (accept(']')) return;
      do dense_list(out);
      while (accept(','));
      expect(']', " in a dense literal");
      return;
    }
    DenseLit l;
    l.off = p_;
    if (accept_kw("true")) {
      l.boolv = 1;
    } else if (accept_kw("false")) {
      l.boolv = 0;
    } else if (peek() == '(') {
      fail(p_, "complex dense literals are not supported");
    } else {
      if (!is_digit(peek()) && peek() != '-' && peek() != '+') expected("a dense element");
      l.n = parse_number();
    }
    out.push_back(l);
  }
  Attr parse_dense(size_t s) {
    expect('<', " after dense");
    ws();
    std::vector<DenseLit> lits;
    std::string hex;
    bool bracketed = peek() == '[';
    size_t hs = p_;
    if (peek() == '"') {
      hex = parse_string();
    } else if (peek() != '>') {
      dense_list(lits);
    }
    expect('>', " closing dense<");
    expect(':', " and the type of a dense attribute");
    size_t ts = (ws(), p_);
    const Type* t = parse_type();
    if (!t->is_tensor) fail(ts, "dense attribute type must be a tensor");
    Elem e = t->elem;
    if (!is_int(e) && !is_float(e)) fail(ts, "dense attribute of non-numeric elements");
    Attr a;
    a.kind = Attr::Kind::Dense;
    a.type = t;
    a.dense.type = t;
    int64_t numel = t->numel();
    int eb = elem_bytes(e);
    if (!hex.empty()) {
      if (hex.size() < 2 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X') || hex.size() % 2)
        fail(hs, "malformed hex dense literal");
      std::vector<uint8_t> bytes;
      for (size_t i = 2; i < hex.size(); i += 2) {
        if (!is_hex(hex[i]) || !is_hex(hex[i + 1])) fail(hs, "malformed hex dense literal");
        bytes.push_back(static_cast<uint8_t>(hex_val(hex[i]) * 16 + hex_val(hex[i + 1])));
      }
      if (static_cast<int64_t>(bytes.size()) == eb) {
        a.dense.splat = true;
      } else if (static_cast<int64_t>(bytes.size()) == eb * numel) {
        a.dense.splat = false;
      } else {
        fail(hs,
             fmt::format("hex dense literal has {} bytes, expected {} or {}", bytes.size(), eb, eb * numel));
      }
      if (e == Elem::i1)
        for (auto& b : bytes) b &= 1;
      a.dense.bytes = std::move(bytes);
      return a;
    }
    if (lits.empty()) fail(s, "empty dense attribute");
    if (!bracketed && lits.size() == 1) {
      a.dense.splat = true;
    } else if (static_cast<int64_t>(lits.size()) == numel) {
      a.dense.splat = false;
    } else {
      fail(s,
           fmt::format("dense attribute has {} elements, its type {} has {}", lits.size(), t->str(), numel));
    }
    for (auto& l : lits) dense_elem(&l.n, l.boolv, l.off, e, a.dense.bytes);
    return a;
  }
  Attr parse_array() {
    expect('<', " after array");
    Attr a;
    a.kind = Attr::Kind::IntArray;
    size_t ts = (ws(), p_);
    const Type* t = parse_type();
    if (t->is_tensor || !is_int(t->elem)) {
      // array<f32: ...>: kept as text (no TTIR op reads one).
      p_ = ts;
      a.kind = Attr::Kind::String;
      while (!eof() && t_[p_] != '>') {
        if (t_[p_] == '<')
          skip_group();
        else
          ++p_;
      }
      a.s = "array<" + std::string(t_.substr(ts, p_ - ts)) + ">";
      expect('>');
      return a;
    }
    a.type = t;
    if (accept(':')) {
      do {
        ws();
        if (accept_kw("true"))
          a.ints.push_back(1);
        else if (accept_kw("false"))
          a.ints.push_back(0);
        else
          a.ints.push_back(parse_int("an array element"));
      } while (accept(','));
    }
    expect('>', " closing array<");
    return a;
  }
  // An attribute value (in attr-dicts, properties and custom `kw = value`).
  Attr parse_attr() {
    ws();
    size_t s = p_;
    Depth d(*this, s);
    char c = peek();
    Attr a;
    if (c == '"') {
      a.kind = Attr::Kind::String;
      a.s = parse_string();
      return a;
    }
    if (c == '[') {
      ++p_;
      std::vector<Attr> items;
      bool all_int = true;
      if (!accept(']')) {
        do {
          items.push_back(parse_attr());
          if (items.back().kind != Attr::Kind::Int) all_int = false;
        } while (accept(','));
        expect(']', " closing a list attribute");
      }
      if (all_int) {
        a.kind = Attr::Kind::IntArray;
        for (auto& it : items) a.ints.push_back(it.i);
      } else {
        a.kind = Attr::Kind::String;
        a.s = std::string(t_.substr(s, p_ - s));
      }
      return a;
    }
    if (c == '{') {
      a.kind = Attr::Kind::String;
      a.s = skip_group();
      return a;
    }
    if (c == '#') {
      ++p_;
      std::string n = suffix_id("an attribute alias or dialect attribute");
      if (peek() == '<') skip_group();
      a.kind = Attr::Kind::String;
      a.s = std::string(t_.substr(s, p_ - s));
      auto it = attr_alias_.find(n);
      if (it != attr_alias_.end() && a.s == "#" + n) a.s = it->second;
      return a;
    }
    if (c == '@') {
      a.kind = Attr::Kind::Symbol;
      a.s = symbol();
      return a;
    }
    if (c == '-' || c == '+' || is_digit(c)) {
      Num n = parse_number();
      if (accept(':')) return typed_number(n, parse_type());
      if (n.is_float) {
        a.kind = Attr::Kind::Float;
        a.f = n.f;
        a.fbits = std::bit_cast<uint64_t>(n.f);
      } else {
        a.kind = Attr::Kind::Int;
        a.i = n.i;
      }
      return a;
    }
    if (c == '!' || c == '<') {
      a.kind = Attr::Kind::Type;
      a.type = parse_type();
      return a;
    }
    if (!is_ident_start(c)) expected("an attribute value");
    if (accept_kw("true") || accept_kw("false")) {
      a.kind = Attr::Kind::Bool;
      a.b = t_[s] == 't';
      a.type = m_.scalar(Elem::i1);
      return a;
    }
    if (accept_kw("unit")) return a;
    if (accept_kw("dense")) return parse_dense(s);
    if (accept_kw("array")) return parse_array();
    if (peek_kw("tensor") || scalar_at_point()) {
      a.kind = Attr::Kind::Type;
      a.type = parse_type();
      return a;
    }
    std::string w = ident();
    if (peek() == '<' || peek() == '(') {  // affine_map<..>, overflow<..>, other opaque forms
      skip_group();
      a.kind = Attr::Kind::String;
      a.s = std::string(t_.substr(s, p_ - s));
      return a;
    }
    a.kind = Attr::Kind::Keyword;
    a.s = w;
    return a;
  }
  bool scalar_at_point() {
    size_t b = p_, e = p_;
    while (e < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[e])) || t_[e] == '_')) ++e;
    if (e < t_.size() && is_ident_char(t_[e])) return false;
    return scalar_named(std::string(t_.substr(b, e - b))) != nullptr;
  }
  std::string symbol() {
    ws();
    if (peek() != '@') expected("a symbol '@name'");
    ++p_;
    if (peek() == '"') return parse_string();
    size_t s = p_;
    while (p_ < t_.size() && is_suffix_char(t_[p_])) ++p_;
    if (p_ == s) expected("a symbol name");
    return std::string(t_.substr(s, p_ - s));
  }
  void attr_dict(std::map<std::string, Attr>& out) {
    expect('{');
    if (accept('}')) return;
    do {
      ws();
      size_t ks = p_;
      std::string k = peek() == '"' ? parse_string() : ident("an attribute name");
      Attr v;
      if (accept('=')) v = parse_attr();
      if (!out.emplace(k, std::move(v)).second) fail(ks, fmt::format("duplicate attribute '{}'", k));
    } while (accept(','));
    expect('}', " closing an attribute dictionary");
  }

  // ---------------------------------------------------------------- locations (reference §3.2)
  int new_loc(LocNode n) {
    locs_.push_back(std::move(n));
    return static_cast<int>(locs_.size() - 1);
  }
  int loc_expr() {
    ws();
    size_t s = p_;
    Depth d(*this, s);
    LocNode n;
    n.off = s;
    if (peek() == '#') {
      ++p_;
      n.k = LocNode::K::Alias;
      n.s = suffix_id("a location alias");
      return new_loc(std::move(n));
    }
    if (accept_kw("unknown")) return new_loc(std::move(n));
    if (accept_kw("callsite")) {
      expect('(', " after callsite");
      int a = loc_expr();
      expect_kw("at");
      int b = loc_expr();
      expect(')', " closing callsite(");
      n.k = LocNode::K::CallSite;
      n.kids = {a, b};
      return new_loc(std::move(n));
    }
    if (accept_kw("fused")) {
      ws();
      if (peek() == '<') skip_group();
      expect('[', " after fused");
      n.k = LocNode::K::Fused;
      if (!accept(']')) {
        do n.kids.push_back(loc_expr());
        while (accept(','));
        expect(']', " closing fused[");
      }
      return new_loc(std::move(n));
    }
    if (peek() == '"') {
      n.s = parse_string();
      if (accept(':')) {
        n.k = LocNode::K::File;
        n.line = small_int("line", 0, INT32_MAX);
        expect(':', " between line and column");
        n.col = small_int("column", 0, INT32_MAX);
        if (accept_kw("to")) {  // FileLineColRange end: `to L:C` or `to :C`
          ws();
          if (is_digit(peek())) parse_int();
          if (accept(':')) parse_int();
        }
        return new_loc(std::move(n));
      }
      n.k = LocNode::K::Name;
      if (accept('(')) {
        n.kids.push_back(loc_expr());
        expect(')', " closing a name location");
      }
      return new_loc(std::move(n));
    }
    expected("a location");
  }
  // Optional trailing `loc(...)`; returns the node or -1.
  int trailing_loc() {
    if (!accept_kw("loc")) return -1;
    expect('(', " after loc");
    int n = loc_expr();
    expect(')', " closing loc(");
    return n;
  }
  int deref(int n) {
    for (int hops = 0; locs_[n].k == LocNode::K::Alias; ++hops) {
      if (hops > 64) fail(locs_[n].off, "location alias cycle");
      auto it = loc_alias_.find(locs_[n].s);
      if (it == loc_alias_.end())
        fail(locs_[n].off, fmt::format("undefined location alias '#{}'", locs_[n].s));
      n = it->second;
    }
    return n;
  }
  void frames(int n, std::vector<Frame>& out, const std::string& name, int depth) {
    if (depth > kMaxDepth) fail(locs_[n].off, "location nesting too deep");
    n = deref(n);
    const LocNode& l = locs_[n];
    switch (l.k) {
      case LocNode::K::Unknown:
      case LocNode::K::Alias: return;
      case LocNode::K::File: out.push_back({l.s, l.line, l.col, name}); return;
      case LocNode::K::Name:
        if (!l.kids.empty()) frames(l.kids[0], out, name.empty() ? l.s : name, depth + 1);
        return;
      case LocNode::K::CallSite:
        frames(l.kids[0], out, "", depth + 1);
        frames(l.kids[1], out, "", depth + 1);
        return;
      case LocNode::K::Fused:
        for (int k : l.kids) {
          size_t before = out.size();
          frames(k, out, name, depth + 1);
          if (out.size() > before) return;
        }
        return;
    }
  }
  static bool triton_internal(const std::string& f) {
    return (f.find("site-packages/triton/") != std::string::npos ||
            f.find("dist-packages/triton/") != std::string::npos);
  }
  PyLoc resolve(int n) {
    PyLoc p;
    int top = deref(n);
    std::string var;
    for (int hops = 0; locs_[top].k == LocNode::K::Name && hops < kMaxDepth; ++hops) {
      if (var.empty()) var = locs_[top].s;
      if (locs_[top].kids.empty()) break;
      top = deref(locs_[top].kids[0]);
    }
    std::vector<Frame> fs;
    frames(n, fs, "", 0);
    if (!fs.empty()) {
      size_t pick = 0;
      while (pick < fs.size() && triton_internal(fs[pick].file)) ++pick;
      if (pick == fs.size()) pick = 0;
      p.file = fs[pick].file;
      p.line = fs[pick].line;
      p.col = fs[pick].col;
      if (var.empty()) var = fs[pick].name;
      if (fs.size() > 1)
        for (auto& f : fs) p.stack.emplace_back(f.file, f.line);
    }
    p.var = var;
    return p;
  }

  // ---------------------------------------------------------------- SSA scopes
  using Scope = std::unordered_map<std::string, std::vector<Value*>>;
  Value* lookup(const Ref& r) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(r.name);
      if (f == it->end()) continue;
      int idx = r.idx < 0 ? 0 : r.idx;
      if (idx >= static_cast<int>(f->second.size()))
        fail(r.off, fmt::format("'%{}' has {} results, no result #{}", r.name, f->second.size(), idx));
      if (r.idx < 0 && f->second.size() > 1) return f->second[0];
      return f->second[idx];
    }
    fail(r.off,
         fmt::format("use of undefined value '%{}{}'", r.name, r.idx >= 0 ? fmt::format("#{}", r.idx) : ""));
  }
  void define(const std::string& name, std::vector<Value*> vals, size_t off) {
    for (auto& sc : scopes_)
      if (sc.count(name)) fail(off, fmt::format("redefinition of '%{}'", name));
    scopes_.back().emplace(name, std::move(vals));
  }
  std::unique_ptr<Value> new_value(const Type* t, std::string name) {
    auto v = std::make_unique<Value>();
    v->type = t;
    v->name = std::move(name);
    v->id = fn_->num_values++;
    return v;
  }
  Ref value_ref() {
    ws();
    Ref r;
    r.off = p_;
    if (peek() != '%') expected("an SSA value '%name'");
    ++p_;
    r.name = suffix_id("a value name");
    if (peek() == '#') {
      ++p_;
      if (!is_digit(peek())) expected("a result number after '#'");
      r.idx = small_int("result number", 0, 1 << 20);
    }
    return r;
  }
  Value* use(const Ref& r, const Type* want = nullptr) {
    Value* v = lookup(r);
    if (want && v->type != want)
      fail(r.off, fmt::format("'%{}{}' has type {}, but the op expects {}", r.name,
                              r.idx >= 0 ? fmt::format("#{}", r.idx) : "", v->type->str(), want->str()));
    return v;
  }

  // ---------------------------------------------------------------- structure
  struct Pending {
    std::unique_ptr<Block> block;
    size_t off;
  };
  struct RegionState {
    Region* r;
    std::unordered_map<std::string, Block*> labels;
    std::unordered_map<std::string, Pending> forward;
  };
  Block* block_ref() {
    ws();
    size_t s = p_;
    if (peek() != '^') expected("a block label '^bb'");
    ++p_;
    std::string l = suffix_id("a block label");
    if (regions_.empty()) fail(s, "block reference outside a region");
    RegionState& rs = regions_.back();
    auto it = rs.labels.find(l);
    if (it != rs.labels.end()) return it->second;
    auto f = rs.forward.find(l);
    if (f != rs.forward.end()) return f->second.block.get();
    auto b = std::make_unique<Block>();
    b->label = l;
    b->parent = rs.r;
    Block* raw = b.get();
    rs.forward.emplace(l, Pending{std::move(b), s});
    return raw;
  }
  struct ArgDef {
    std::string name;
    const Type* type;
    size_t off;
    int loc = -1;
  };
  std::vector<ArgDef> block_args() {
    std::vector<ArgDef> v;
    if (accept(')')) return v;
    do {
      ws();
      ArgDef a;
      a.off = p_;
      if (peek() != '%') expected("a block argument '%name'");
      ++p_;
      a.name = suffix_id("an argument name");
      expect(':', " after a block argument");
      a.type = parse_type();
      a.loc = trailing_loc();
      v.push_back(std::move(a));
    } while (accept(','));
    expect(')', " closing block arguments");
    return v;
  }
  void add_args(Block* b, const std::vector<ArgDef>& args) {
    for (auto& a : args) {
      auto v = new_value(a.type, a.name);
      v->block = b;
      v->index = static_cast<int>(b->args.size());
      Value* raw = v.get();
      b->args.push_back(std::move(v));
      define(a.name, {raw}, a.off);
      if (a.loc >= 0) value_locs_.emplace_back(raw, a.loc);
    }
  }
  // A region `{ ... }`. `entry` (if given) are the entry block's arguments defined by the op
  // (scf.for's iv and iter_args, a function's signature).
  void region(Region& r, Op* parent, const std::vector<ArgDef>* entry) {
    ws();
    size_t s = p_;
    Depth d(*this, s);
    expect('{', " opening a region");
    r.parent = parent;
    scopes_.emplace_back();
    regions_.push_back(RegionState{&r, {}, {}});
    Block* cur = nullptr;
    if (entry) {
      r.blocks.push_back(std::make_unique<Block>());
      cur = r.blocks.back().get();
      cur->parent = &r;
      add_args(cur, *entry);
    }
    bool first = true;
    for (;;) {
      ws();
      if (eof()) fail(s, "unterminated region: expected '}'");
      if (accept('}')) break;
      if (peek() == '^') {
        size_t ls = p_;
        ++p_;
        std::string l = suffix_id("a block label");
        std::vector<ArgDef> args;
        if (accept('(')) args = block_args();
        expect(':', " after a block label");
        RegionState& rs = regions_.back();
        if (rs.labels.count(l)) fail(ls, fmt::format("redefinition of block '^{}'", l));
        if (first && entry) {
          if (!args.empty()) fail(ls, "entry block arguments are already given by the op");
          cur->label = l;
        } else {
          std::unique_ptr<Block> b;
          auto f = rs.forward.find(l);
          if (f != rs.forward.end()) {
            b = std::move(f->second.block);
            rs.forward.erase(f);
          } else {
            b = std::make_unique<Block>();
            b->label = l;
            b->parent = &r;
          }
          cur = b.get();
          r.blocks.push_back(std::move(b));
          add_args(cur, args);
        }
        rs.labels[l] = cur;
        first = false;
        continue;
      }
      if (!cur) {
        r.blocks.push_back(std::make_unique<Block>());
        cur = r.blocks.back().get();
        cur->parent = &r;
      }
      first = false;
      op(cur);
    }
    RegionState& rs = regions_.back();
    if (!rs.forward.empty()) {
      auto& [l, p] = *rs.forward.begin();
      fail(p.off, fmt::format("use of undefined block '^{}'", l));
    }
    regions_.pop_back();
    scopes_.pop_back();
  }

  // ---------------------------------------------------------------- ops
  bool statement_start() {
    // At '%': is this `%a = `, `%a:2 = ` or `%a, %b = ` (the next op) rather than an operand?
    size_t q = p_ + 1;
    while (q < t_.size() && is_suffix_char(t_[q])) ++q;
    auto skip = [&] {
      while (q < t_.size() && (t_[q] == ' ' || t_[q] == '\t' || t_[q] == '\n' || t_[q] == '\r')) ++q;
    };
    skip();
    if (q < t_.size() && t_[q] == ':') {
      ++q;
      skip();
      while (q < t_.size() && is_digit(t_[q])) ++q;
      skip();
    }
    return q < t_.size() && t_[q] == '=' && (q + 1 >= t_.size() || t_[q + 1] != '=');
  }
  std::vector<Item> items(Op& o) {
    std::vector<Item> v;
    for (;;) {
      ws();
      if (eof()) break;
      char c = peek();
      size_t s = p_;
      if (c == ':') break;
      if (c == '%') {
        if (statement_start()) break;
        Item it;
        it.k = Item::K::Operand;
        it.ref = value_ref();
        it.off = s;
        v.push_back(std::move(it));
      } else if (c == ',' || c == '[' || c == ']') {
        ++p_;
      } else if (c == '"') {
        Item it;
        it.k = Item::K::String;
        it.word = parse_string();
        it.off = s;
        v.push_back(std::move(it));
      } else if (c == '{') {
        attr_dict(o.attrs);
      } else if (is_ident_start(c)) {
        if (peek_kw("loc") && peek(3) == '(') break;
        std::string w = ident();
        if (peek() == '<') {  // overflow<nsw>, fastmath<fast>: no semantics for TTIR (reference §2.1)
          Attr a;
          a.kind = Attr::Kind::String;
          a.s = w + skip_group();
          o.attrs[w] = std::move(a);
          continue;
        }
        ws();
        if (peek() == '=' && peek(1) != '=') {
          ++p_;
          ws();
          Attr a;
          if (peek() == '"') {
            a.kind = Attr::Kind::String;
            a.s = parse_string();
          } else if (is_digit(peek()) || peek() == '-') {
            a.kind = Attr::Kind::Int;
            a.i = parse_int();
          } else {
            a.kind = Attr::Kind::Keyword;
            a.s = ident("a keyword value");
          }
          Item it;
          it.k = Item::K::KwValue;
          it.word = w;
          it.val = std::move(a);
          it.off = s;
          v.push_back(std::move(it));
        } else {
          Item it;
          it.word = w;
          it.off = s;
          v.push_back(std::move(it));
        }
      } else {
        break;
      }
    }
    return v;
  }
  static Attr keyword(const std::string& s) {
    Attr a;
    a.kind = Attr::Kind::Keyword;
    a.s = s;
    return a;
  }

  // Apply the keywords and `kw = value` items of a custom form to the op's attributes.
  void apply_keywords(Op& o, const std::vector<Item>& its) {
    static const std::unordered_map<std::string_view, std::vector<std::string>> positional = {
        {"arith.cmpi", {"predicate"}},
        {"arith.cmpf", {"predicate"}},
        {"tt.get_program_id", {"axis"}},
        {"tt.get_num_programs", {"axis"}},
        {"tt.atomic_rmw", {"atomic_rmw_op", "sem", "scope"}},
        {"tt.atomic_cas", {"sem", "scope"}},
        {"tt.atomic_load", {"sem", "scope"}},   // 3.9
        {"tt.atomic_store", {"sem", "scope"}},  // 3.9
        {"tt.atomic_poll", {"sem", "scope"}},   // 3.9
        {"tt.descriptor_reduce", {"kind"}},
    };
    static const std::unordered_map<std::string_view, std::vector<std::string>> units = {
        {"tt.reshape", {"allow_reorder", "efficient_layout"}},
        {"ttg.barrier", {"all", "local", "global_read", "global_write", "tensor_read", "tensor_write"}},
        {"tt.dot_scaled", {"scale"}},
        {"scf.for", {"unsigned"}},
        {"tt.atomic_poll", {"timeout"}},  // `timeout %t`: the operand after it is the i64 budget
    };
    auto pos = positional.find(o.name);
    size_t k = 0;
    for (const Item& it : its) {
      if (it.k == Item::K::Keyword) {
        if (pos != positional.end() && k < pos->second.size()) {
          const std::string& key = pos->second[k++];
          if (key == "axis") {
            int ax = it.word == "x" ? 0 : it.word == "y" ? 1 : it.word == "z" ? 2 : -1;
            if (ax < 0) fail(it.off, fmt::format("expected program axis x, y or z, found '{}'", it.word));
            Attr a;
            a.kind = Attr::Kind::Int;
            a.i = ax;
            a.type = m_.scalar(Elem::i32);
            o.attrs[key] = a;
          } else {
            o.attrs[key] = keyword(it.word);
          }
          continue;
        }
        auto u = units.find(o.name);
        if (u != units.end() && std::find(u->second.begin(), u->second.end(), it.word) != u->second.end()) {
          if (it.word != "scale") o.attrs[it.word] = Attr{};
          continue;
        }
        fail(it.off, fmt::format("unexpected keyword '{}' in '{}'", it.word, o.name));
      } else if (it.k == Item::K::KwValue) {
        std::string key = it.word == "cacheModifier"    ? "cache"
                          : it.word == "evictionPolicy" ? "evict"
                                                        : it.word;
        o.attrs[key] = it.val;
      }
    }
    if (pos != positional.end() && k < pos->second.size())
      fail(op_off_, fmt::format("'{}' expects {} leading keyword(s) ({})", o.name, pos->second.size(),
                                fmt::join(pos->second, ", ")));
  }
  /// The common custom form: operands, keywords (`slt`, `cacheModifier = cg`) and an attribute
  /// dictionary before the colon, no strings. Keywords become attributes; returns the operands.
  std::vector<Ref> plain_operands(Op& o) {
    auto its = items(o);
    no_strings(its, o);
    apply_keywords(o, its);
    return operands_of(its);
  }
  std::vector<Ref> operands_of(const std::vector<Item>& its) {
    std::vector<Ref> v;
    for (auto& it : its)
      if (it.k == Item::K::Operand) v.push_back(it.ref);
    return v;
  }
  void no_strings(const std::vector<Item>& its, const Op& o) {
    for (auto& it : its)
      if (it.k == Item::K::String) fail(it.off, fmt::format("unexpected string in '{}'", o.name));
  }
  void want_count(const Op& o, const std::vector<Ref>& ops, size_t lo, size_t hi) {
    if (ops.size() < lo || ops.size() > hi) {
      std::string n = lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi);
      fail(op_off_, fmt::format("'{}' expects {} operands, found {}", o.name, n, ops.size()));
    }
  }
  // The result type of tt.load: the pointee with the pointer's shape.
  const Type* loaded(const Type* p, size_t off) {
    if (!p->is_ptr()) fail(off, fmt::format("tt.load needs a pointer type, found {}", p->str()));
    if (p->is_block_ptr()) return p->pointee;
    if (!p->is_tensor) return p->pointee;
    Type t = *p->pointee;
    if (t.is_tensor) fail(off, "tensor of block pointers is not supported");
    t.is_tensor = true;
    t.shape = p->shape;
    return m_.intern(t);
  }

  void custom(Op& o, std::vector<const Type*>& res, size_t nres) {
    Syntax sx = o.def->syntax;
    const std::string& n = o.name;
    switch (sx) {
      case Syntax::SameType: {
        if (n == "arith.constant") {
          ws();
          if (peek() == '{') attr_dict(o.attrs);
          size_t s = (ws(), p_);
          Attr a = parse_attr();
          if (a.kind == Attr::Kind::Bool) {
            a.kind = Attr::Kind::Bool;
          } else if (a.kind != Attr::Kind::Int && a.kind != Attr::Kind::Float &&
                     a.kind != Attr::Kind::Dense) {
            fail(s, "arith.constant expects an integer, float, boolean or dense value");
          } else if (!a.type) {
            fail(s, "arith.constant value needs a type (`: i32`)");
          }
          res.push_back(a.type);
          o.attrs["value"] = std::move(a);
          return;
        }
        auto ops = plain_operands(o);
        expect(':', fmt::format(" before the type of '{}'", n).c_str());
        const Type* t = parse_type();
        for (auto& r : ops) o.operands.push_back(use(r, t));
        res.push_back(t);
        return;
      }
      case Syntax::Compare: {
        auto ops = plain_operands(o);
        want_count(o, ops, 2, 2);
        expect(':');
        const Type* t = parse_type();
        for (auto& r : ops) o.operands.push_back(use(r, t));
        res.push_back(m_.with_elem(t, Elem::i1));
        return;
      }
      case Syntax::Select: {
        auto ops = plain_operands(o);
        want_count(o, ops, 3, 3);
        expect(':');
        auto ts = type_list();
        if (ts.size() > 2) fail(op_off_, "arith.select takes one or two types");
        const Type* t = ts.back();
        const Type* ct = ts.size() == 2 ? ts[0] : m_.scalar(Elem::i1);
        o.operands = {use(ops[0], ct), use(ops[1], t), use(ops[2], t)};
        res.push_back(t);
        return;
      }
      case Syntax::Cast: {
        auto ops = plain_operands(o);
        want_count(o, ops, 1, 1);
        expect(':');
        const Type* a = parse_type();
        expect_kw("to");
        const Type* b = parse_type();
        o.operands.push_back(use(ops[0], a));
        res.push_back(b);
        return;
      }
      case Syntax::Arrow: {
        // tt.elementwise_inline_asm "asm" {attrs} %args : T -> R (reference §1.1).
        bool is_asm = n == "tt.elementwise_inline_asm";
        auto its = items(o);
        for (auto& it : its)
          if (it.k == Item::K::String) {
            if (!is_asm || o.attrs.count("asm_string"))
              fail(it.off, fmt::format("unexpected string in '{}'", n));
            Attr a;
            a.kind = Attr::Kind::String;
            a.s = it.word;
            o.attrs["asm_string"] = a;
          }
        if (is_asm && !o.attrs.count("asm_string"))
          fail(op_off_, "tt.elementwise_inline_asm needs an asm string");
        apply_keywords(o, its);
        auto ops = operands_of(its);
        std::vector<const Type*> lhs;
        if (accept(':'))
          lhs = type_list();
        else if (!is_asm || !ops.empty())
          expected("':' and the operand type");
        expect_arrow();
        auto rhs = type_list();
        if (!is_asm && ops.empty()) fail(op_off_, fmt::format("'{}' expects an operand", n));
        if (is_asm) {
          if (lhs.size() != ops.size())
            fail(op_off_, fmt::format("{} operands but {} operand types", ops.size(), lhs.size()));
          for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(ops[i], lhs[i]));
          res = rhs;
          return;
        }
        // Written types go to the leading operands (cat/join/histogram/descriptor_load write one).
        if (lhs.size() > ops.size()) fail(op_off_, "more operand types than operands");
        for (size_t i = 0; i < ops.size(); ++i)
          o.operands.push_back(use(ops[i], i < lhs.size() ? lhs[i] : nullptr));
        if (n == "tt.split") {
          if (rhs.size() != 1) fail(op_off_, "tt.split takes one result type");
          res = {rhs[0], rhs[0]};
        } else {
          res = rhs;
        }
        return;
      }
      case Syntax::FirstType: {
        auto ops = plain_operands(o);
        want_count(o, ops, 2, 2);
        expect(':');
        auto ts = type_list();
        if (ts.size() != 2) fail(op_off_, fmt::format("'{}' takes two types", n));
        o.operands = {use(ops[0], ts[0]), use(ops[1], ts[1])};
        res.push_back(ts[0]);
        return;
      }
      case Syntax::Functional: {
        auto ops = plain_operands(o);
        expect(':');
        auto in = paren_types();
        expect_arrow();
        res = result_types();
        if (in.size() != ops.size())
          fail(op_off_, fmt::format("{} operands but {} operand types", ops.size(), in.size()));
        for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(ops[i], in[i]));
        return;
      }
      case Syntax::Load: {
        auto ops = plain_operands(o);
        want_count(o, ops, 1, 3);
        expect(':');
        size_t ts = (ws(), p_);
        const Type* pt = parse_type();
        const Type* r = loaded(pt, ts);
        o.operands.push_back(use(ops[0], pt));
        for (size_t i = 1; i < ops.size(); ++i) o.operands.push_back(use(ops[i]));
        res.push_back(r);
        return;
      }
      case Syntax::NoResult: {
        auto ops = plain_operands(o);
        if (ops.empty()) fail(op_off_, fmt::format("'{}' expects operands", n));
        expect(':');
        auto ts = type_list();
        std::vector<const Type*> want(ops.size(), nullptr);
        if (ts.size() == ops.size()) {
          want = ts;
        } else if (ts.size() == 2 && (n == "tt.descriptor_store" || n == "tt.descriptor_reduce")) {
          want.front() = ts[0];
          want.back() = ts[1];
        } else if (ts.size() == 1) {
          want.front() = ts[0];
        } else {
          fail(op_off_, fmt::format("{} operands but {} types", ops.size(), ts.size()));
        }
        for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(ops[i], want[i]));
        return;
      }
      case Syntax::Unsplat: {
        auto ops = plain_operands(o);
        want_count(o, ops, 1, 1);
        expect(':');
        const Type* t = parse_type();
        o.operands.push_back(use(ops[0], t));
        res.push_back(m_.element_of(t));
        return;
      }
      case Syntax::Dot: {
        auto ops = plain_operands(o);
        want_count(o, ops, 3, 3);
        expect(':');
        const Type* a = parse_type();
        expect('*', " between dot operand types");
        const Type* b = parse_type();
        expect_arrow();
        const Type* c = parse_type();
        o.operands = {use(ops[0], a), use(ops[1], b), use(ops[2], c)};
        res.push_back(c);
        return;
      }
      case Syntax::DotScaled: {
        auto its = items(o);
        no_strings(its, o);
        apply_keywords(o, its);
        // Operands in order a, [scale a_scale], b, [scale b_scale], c (reference §1.5).
        std::vector<std::pair<Ref, bool>> seq;
        bool pending_scale = false;
        for (auto& it : its) {
          if (it.k == Item::K::Keyword && it.word == "scale") {
            if (pending_scale || seq.empty()) fail(it.off, "misplaced 'scale'");
            pending_scale = true;
          } else if (it.k == Item::K::Operand) {
            seq.emplace_back(it.ref, pending_scale);
            pending_scale = false;
          }
        }
        if (pending_scale) fail(op_off_, "'scale' without an operand");
        size_t i = 0;
        auto take = [&](bool scale) -> const Ref* {
          if (i < seq.size() && seq[i].second == scale) return &seq[i++].first;
          return nullptr;
        };
        const Ref* a = take(false);
        const Ref* as = take(true);
        const Ref* b = take(false);
        const Ref* bs = take(true);
        const Ref* c = take(false);
        if (!a || !b || !c || i != seq.size())
          fail(op_off_, "tt.dot_scaled expects a [scale s], b [scale s], c");
        if (!o.attrs.count("lhs") || !o.attrs.count("rhs"))
          fail(op_off_, "tt.dot_scaled needs lhs = .. rhs = ..");
        Attr fa, fb;
        fa.kind = fb.kind = Attr::Kind::Bool;
        fa.b = as != nullptr;
        fb.b = bs != nullptr;
        o.attrs["a_scale"] = fa;
        o.attrs["b_scale"] = fb;
        expect(':');
        const Type* ta = parse_type();
        const Type* tas = nullptr;
        if (as) {
          expect(',');
          tas = parse_type();
        }
        expect('*');
        const Type* tb = parse_type();
        const Type* tbs = nullptr;
        if (bs) {
          expect(',');
          tbs = parse_type();
        }
        expect_arrow();
        const Type* tc = parse_type();
        o.operands.push_back(use(*a, ta));
        if (as) o.operands.push_back(use(*as, tas));
        o.operands.push_back(use(*b, tb));
        if (bs) o.operands.push_back(use(*bs, tbs));
        o.operands.push_back(use(*c, tc));
        res.push_back(tc);
        return;
      }
      case Syntax::StrippedPtr: {
        auto ops = plain_operands(o);
        if (ops.empty()) fail(op_off_, fmt::format("'{}' expects operands", n));
        expect(':');
        size_t ts = (ws(), p_);
        const Type* t = parse_type();
        if (!t->is_block_ptr()) fail(ts, fmt::format("'{}' produces a block pointer, found {}", n, t->str()));
        for (size_t i = 0; i < ops.size(); ++i)
          o.operands.push_back(use(ops[i], (i == 0 && n == "tt.advance") ? t : nullptr));
        res.push_back(t);
        return;
      }
      case Syntax::MakeDesc: {
        auto ops = plain_operands(o);
        if (ops.empty()) fail(op_off_, "tt.make_tensor_descriptor expects operands");
        expect(':');
        const Type* base = parse_type();
        expect(',');
        size_t ds = (ws(), p_);
        const Type* d = parse_type(true);
        if (d->elem != Elem::tensordesc) fail(ds, "expected a tensor descriptor type");
        o.operands.push_back(use(ops[0], base));
        for (size_t i = 1; i < ops.size(); ++i) o.operands.push_back(use(ops[i]));
        res.push_back(d);
        return;
      }
      case Syntax::Print: {
        Attr pre;
        pre.kind = Attr::Kind::String;
        pre.s = parse_string();
        o.attrs["prefix"] = pre;
        ws();
        if (peek() == '{') attr_dict(o.attrs);
        if (accept(':')) {
          std::vector<Ref> ops{value_ref()};
          while (accept(',')) ops.push_back(value_ref());
          expect(':', " before the types of tt.print operands");
          auto ts = type_list();
          if (ts.size() != ops.size())
            fail(op_off_, fmt::format("{} operands but {} types", ops.size(), ts.size()));
          for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(ops[i], ts[i]));
        }
        return;
      }
      case Syntax::Assert: {
        auto its = items(o);
        apply_keywords(o, its);
        auto ops = operands_of(its);
        want_count(o, ops, 1, 1);
        int strings = 0;
        for (auto& it : its)
          if (it.k == Item::K::String) {
            Attr a;
            a.kind = Attr::Kind::String;
            a.s = it.word;
            o.attrs["message"] = a;
            ++strings;
          }
        if (strings != 1) fail(op_off_, "tt.assert expects one message string");
        expect(':');
        o.operands.push_back(use(ops[0], parse_type()));
        return;
      }
      case Syntax::Call: {
        Attr c;
        c.kind = Attr::Kind::Symbol;
        c.s = symbol();
        o.attrs["callee"] = c;
        expect('(', " after the callee");
        std::vector<Ref> ops;
        if (!accept(')')) {
          do ops.push_back(value_ref());
          while (accept(','));
          expect(')', " closing call operands");
        }
        ws();
        if (peek() == '{') attr_dict(o.attrs);
        expect(':');
        auto in = paren_types();
        expect_arrow();
        res = result_types();
        if (in.size() != ops.size())
          fail(op_off_, fmt::format("{} operands but {} types", ops.size(), in.size()));
        for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(ops[i], in[i]));
        return;
      }
      case Syntax::Condition:
      case Syntax::Return: {
        if (sx == Syntax::Condition) {
          expect('(', " after scf.condition");
          o.operands.push_back(use(value_ref(), m_.scalar(Elem::i1)));
          expect(')', " closing scf.condition(");
        }
        auto ops = plain_operands(o);
        std::vector<const Type*> ts;
        if (!ops.empty()) {
          expect(':', " before the types of returned values");
          ts = type_list();
        }
        if (ts.size() != ops.size())
          fail(op_off_, fmt::format("{} operands but {} types", ops.size(), ts.size()));
        for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(ops[i], ts[i]));
        return;
      }
      case Syntax::Barrier: {
        // gpu.barrier and tt.grid_dependency_* (3.9) take nothing; ttg.barrier (3.7+) takes
        // address-space keywords joined by '|'.
        // Only known keywords are read, so a following op without a loc(...) is not swallowed.
        static const char* kinds[] = {"all",          "local",       "global_read",
                                      "global_write", "tensor_read", "tensor_write"};
        for (bool more = n == "ttg.barrier"; more;) {
          more = false;
          for (const char* k : kinds)
            if (accept_kw(k)) {
              o.attrs[k] = Attr{};
              more = accept('|');
              break;
            }
        }
        {  // an operand on the op's own line is an error here, not the start of the next statement
          size_t q = p_;
          while (q < t_.size() && (t_[q] == ' ' || t_[q] == '\t')) ++q;
          if (q < t_.size() && t_[q] == '%') fail(q, fmt::format("'{}' takes no operands", n));
        }
        ws();
        if (peek() == '{') attr_dict(o.attrs);
        if (nres) fail(op_off_, fmt::format("'{}' has no results", n));
        return;
      }
      case Syntax::Branch: {
        Block* b = block_ref();
        o.successors.push_back(b);
        o.successor_operands.push_back(successor_args());
        return;
      }
      case Syntax::CondBranch: {
        o.operands.push_back(use(value_ref(), m_.scalar(Elem::i1)));
        expect(',');
        for (int k = 0; k < 2; ++k) {
          if (k) expect(',');
          o.successors.push_back(block_ref());
          o.successor_operands.push_back(successor_args());
        }
        return;
      }
      case Syntax::For: return parse_for(o, res);
      case Syntax::If: return parse_if(o, res);
      case Syntax::While: return parse_while(o, res);
      case Syntax::GenericOnly:
        fail(op_off_, fmt::format("'{}' is only written in the generic form \"{}\"(...)", n, n));
    }
  }
  std::vector<Value*> successor_args() {
    std::vector<Value*> v;
    if (!accept('(')) return v;
    std::vector<Ref> ops{value_ref()};
    while (accept(',')) ops.push_back(value_ref());
    expect(':', " before successor operand types");
    auto ts = type_list();
    expect(')', " closing successor operands");
    if (ts.size() != ops.size())
      fail(ops[0].off, fmt::format("{} operands but {} types", ops.size(), ts.size()));
    for (size_t i = 0; i < ops.size(); ++i) v.push_back(use(ops[i], ts[i]));
    return v;
  }
  void parse_for(Op& o, std::vector<const Type*>& res) {
    if (accept_kw("unsigned")) o.attrs["unsigned"] = Attr{};
    ws();
    ArgDef iv;
    iv.off = p_;
    if (peek() != '%') expected("the induction variable");
    ++p_;
    iv.name = suffix_id("the induction variable");
    expect('=');
    Ref lb = value_ref();
    expect_kw("to");
    Ref ub = value_ref();
    expect_kw("step");
    Ref st = value_ref();
    std::vector<ArgDef> iters;
    std::vector<Ref> inits;
    if (accept_kw("iter_args")) {
      expect('(');
      if (!accept(')')) assignments("an iter_args name", iters, inits, " closing iter_args");
      expect_arrow();
      res = result_types();
      if (res.size() != iters.size())
        fail(op_off_, fmt::format("{} iter_args but {} result types", iters.size(), res.size()));
    }
    const Type* ivt = nullptr;
    if (accept(':')) ivt = parse_type();
    if (!ivt) ivt = lookup(lb)->type;
    o.operands = {use(lb, ivt), use(ub, ivt), use(st, ivt)};
    for (size_t i = 0; i < inits.size(); ++i) {
      o.operands.push_back(use(inits[i], res[i]));
      iters[i].type = res[i];
    }
    iv.type = ivt;
    std::vector<ArgDef> entry{iv};
    entry.insert(entry.end(), iters.begin(), iters.end());
    o.regions.push_back(std::make_unique<Region>());
    region(*o.regions.back(), &o, &entry);
    implicit_yield(*o.regions.back(), o);
    ws();
    if (peek() == '{') attr_dict(o.attrs);
  }
  // scf.for without iter_args and scf.if without results print their body without the empty
  // `scf.yield` (MLIR elides implicit terminators); put it back so every body ends in a terminator.
  void implicit_yield(Region& r, Op& parent) {
    if (r.blocks.empty()) {
      r.blocks.push_back(std::make_unique<Block>());
      r.blocks.back()->parent = &r;
    }
    Block* b = r.blocks.back().get();
    if (!b->ops.empty()) {
      Syntax sx = b->ops.back()->def->syntax;
      if (sx == Syntax::Return || sx == Syntax::Branch || sx == Syntax::CondBranch || sx == Syntax::Condition)
        return;
    }
    auto y = std::make_unique<Op>();
    y->name = "scf.yield";
    y->def = find_op("scf.yield");
    y->parent = b;
    y->pos = pos_of(p_ ? p_ - 1 : 0);
    implicit_.emplace_back(y.get(), &parent);
    b->ops.push_back(std::move(y));
  }
  void parse_if(Op& o, std::vector<const Type*>& res) {
    o.operands.push_back(use(value_ref(), m_.scalar(Elem::i1)));
    if (accept_arrow()) res = result_types();
    o.regions.push_back(std::make_unique<Region>());
    region(*o.regions.back(), &o, nullptr);
    implicit_yield(*o.regions.back(), o);
    if (accept_kw("else")) {
      o.regions.push_back(std::make_unique<Region>());
      region(*o.regions.back(), &o, nullptr);
      implicit_yield(*o.regions.back(), o);
    }
    ws();
    if (peek() == '{') attr_dict(o.attrs);
  }
  /// `%a = %x, %b = %y, ...)`: block arguments and the values they start from (scf.for iter_args,
  /// scf.while), after the opening parenthesis, up to and including the closing one.
  void assignments(const char* what, std::vector<ArgDef>& args, std::vector<Ref>& inits,
                   const char* closing) {
    do {
      ws();
      ArgDef a;
      a.off = p_;
      if (peek() != '%') expected(what);
      ++p_;
      a.name = suffix_id(what);
      expect('=');
      inits.push_back(value_ref());
      args.push_back(std::move(a));
    } while (accept(','));
    expect(')', closing);
  }
  void parse_while(Op& o, std::vector<const Type*>& res) {
    std::vector<ArgDef> args;
    std::vector<Ref> inits;
    if (accept('(')) {
      if (!accept(')')) assignments("a while argument", args, inits, "");
    }
    expect(':', " before the scf.while types");
    auto in = paren_types();
    expect_arrow();
    res = result_types();
    if (in.size() != args.size())
      fail(op_off_, fmt::format("{} while arguments but {} types", args.size(), in.size()));
    for (size_t i = 0; i < args.size(); ++i) {
      o.operands.push_back(use(inits[i], in[i]));
      args[i].type = in[i];
    }
    o.regions.push_back(std::make_unique<Region>());
    region(*o.regions.back(), &o, &args);
    expect_kw("do");
    o.regions.push_back(std::make_unique<Region>());
    region(*o.regions.back(), &o, nullptr);
    if (accept_kw("attributes")) attr_dict(o.attrs);
  }
  void generic(Op& o, std::vector<const Type*>& res) {
    expect('(', " after the generic op name");
    std::vector<Ref> ops;
    if (!accept(')')) {
      do ops.push_back(value_ref());
      while (accept(','));
      expect(')', " closing generic operands");
    }
    if (accept('[')) {
      do o.successors.push_back(block_ref());
      while (accept(','));
      expect(']', " closing successors");
    }
    ws();
    if (peek() == '<' && peek(1) == '{') {
      ++p_;
      attr_dict(o.attrs);
      expect('>', " closing properties");
    }
    ws();
    if (peek() == '(') {
      ++p_;
      do {
        o.regions.push_back(std::make_unique<Region>());
        region(*o.regions.back(), &o, nullptr);
      } while (accept(','));
      expect(')', " closing the region list");
    }
    ws();
    if (peek() == '{') attr_dict(o.attrs);
    expect(':', " before the generic op type");
    auto in = paren_types();
    expect_arrow();
    res = result_types();
    if (in.size() != ops.size())
      fail(op_off_, fmt::format("{} operands but {} operand types", ops.size(), in.size()));
    std::vector<Value*> vals;
    for (size_t i = 0; i < ops.size(); ++i) vals.push_back(use(ops[i], in[i]));
    if (o.successors.empty()) {
      o.operands = std::move(vals);
      return;
    }
    // Branches: operandSegmentSizes splits [own operands, successor 0 operands, ...].
    const Attr* seg = o.attr("operandSegmentSizes");
    std::vector<int64_t> sizes;
    if (seg && seg->kind == Attr::Kind::IntArray)
      sizes = seg->ints;
    else if (o.successors.size() == 1)
      sizes = {0, static_cast<int64_t>(vals.size())};
    if (sizes.size() == o.successors.size() && o.name == "cf.cond_br") sizes.insert(sizes.begin(), 1);
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    if (sizes.size() != o.successors.size() + 1 || total != static_cast<int64_t>(vals.size()))
      fail(op_off_, "cannot split the operands of a generic branch among its successors");
    size_t k = 0;
    for (int64_t j = 0; j < sizes[0]; ++j) o.operands.push_back(vals[k++]);
    for (size_t s = 0; s < o.successors.size(); ++s) {
      o.successor_operands.emplace_back();
      for (int64_t j = 0; j < sizes[s + 1]; ++j) o.successor_operands.back().push_back(vals[k++]);
    }
  }

  void op(Block* b) {
    ws();
    size_t start = p_;
    Depth d(*this, start);
    std::vector<ResultName> names;
    if (peek() == '%') {
      do {
        ws();
        ResultName r;
        r.off = p_;
        if (peek() != '%') expected("a result name");
        ++p_;
        r.name = suffix_id("a result name");
        if (accept(':')) r.count = small_int("result count", 1, 4096);
        names.push_back(std::move(r));
      } while (accept(','));
      expect('=', " after the result names");
    }
    ws();
    size_t name_off = p_;
    bool is_generic = peek() == '"';
    std::string name = is_generic ? parse_string() : ident("an op name");
    const OpDef* def = find_op(name);
    if (!def) fail(name_off, fmt::format("unknown op '{}'", name));
    auto o = std::make_unique<Op>();
    o->name = name;
    o->def = def;
    o->parent = b;
    o->pos = pos_of(start);
    size_t saved = op_off_;
    op_off_ = start;
    std::vector<const Type*> res;
    if (is_generic)
      generic(*o, res);
    else
      custom(*o, res, names.size());
    op_off_ = saved;
    size_t total = 0;
    for (auto& r : names) total += r.count;
    if (total != res.size())
      fail(start, fmt::format("'{}' has {} result(s) but {} name(s) are defined", name, res.size(), total));
    size_t k = 0;
    for (auto& r : names) {
      std::vector<Value*> group;
      for (int j = 0; j < r.count; ++j, ++k) {
        auto v = new_value(res[k], r.count > 1 ? fmt::format("{}#{}", r.name, j) : r.name);
        v->def = o.get();
        v->index = static_cast<int>(k);
        group.push_back(v.get());
        o->results.push_back(std::move(v));
      }
      define(r.name, std::move(group), r.off);
    }
    int l = trailing_loc();
    if (l >= 0) op_locs_.emplace_back(o.get(), l);
    b->ops.push_back(std::move(o));
  }

  void func(size_t start) {
    auto f = std::make_unique<Function>();
    f->pos = pos_of(start);
    if (accept_kw("private") || accept_kw("nested"))
      f->is_public = false;
    else
      accept_kw("public");
    f->name = symbol();
    for (auto& g : m_.functions)
      if (g->name == f->name) fail(start, fmt::format("redefinition of function '@{}'", f->name));
    fn_ = f.get();
    scopes_.clear();
    scopes_.emplace_back();
    std::vector<ArgDef> args;
    expect('(', " opening the argument list");
    if (!accept(')')) {
      do {
        ws();
        ArgDef a;
        a.off = p_;
        if (peek() != '%') expected("a function argument '%name'");
        ++p_;
        a.name = suffix_id("an argument name");
        expect(':');
        a.type = parse_type();
        f->arg_attrs.emplace_back();
        ws();
        if (peek() == '{') attr_dict(f->arg_attrs.back());
        a.loc = trailing_loc();
        args.push_back(std::move(a));
      } while (accept(','));
      expect(')', " closing the argument list");
    }
    if (accept_arrow()) {
      ws();
      if (accept('(')) {
        if (!accept(')')) {
          do {
            f->result_types.push_back(parse_type());
            ws();
            if (peek() == '{') {
              std::map<std::string, Attr> ignored;
              attr_dict(ignored);
            }
          } while (accept(','));
          expect(')');
        }
      } else {
        f->result_types.push_back(parse_type());
      }
    }
    if (accept_kw("attributes")) attr_dict(f->attrs);
    ws();
    if (peek() == '{') {
      region(f->body, nullptr, &args);
    } else {  // declaration: keep the signature in an entry block without ops
      f->body.blocks.push_back(std::make_unique<Block>());
      f->body.blocks.back()->parent = &f->body;
      scopes_.emplace_back();
      add_args(f->body.blocks.back().get(), args);
    }
    int l = trailing_loc();
    if (l >= 0) fn_locs_.emplace_back(f.get(), l);
    m_.functions.push_back(std::move(f));
    fn_ = nullptr;
  }

  void module() {
    ws();
    if (peek() == '@') symbol();
    if (accept_kw("attributes")) {
      std::map<std::string, Attr> ignored;
      attr_dict(ignored);
    }
    size_t s = (ws(), p_);
    expect('{', " opening the module");
    for (;;) {
      ws();
      if (eof()) fail(s, "unterminated module: expected '}'");
      if (accept('}')) break;
      size_t fs = p_;
      if (accept_kw("tt.func")) {
        func(fs);
        continue;
      }
      expected("'tt.func' or '}' in the module");
    }
    int l = trailing_loc();
    if (l >= 0) other_locs_.push_back(l);
  }

  std::string_view t_;
  size_t p_ = 0;
  const std::string& file_;
  Module& m_;
  std::vector<size_t> lines_;
  int depth_ = 0;
  size_t op_off_ = 0;
  Function* fn_ = nullptr;
  std::vector<Scope> scopes_;
  std::vector<RegionState> regions_;
  std::vector<LocNode> locs_;
  std::unordered_map<std::string, int> loc_alias_;
  std::unordered_map<std::string, std::string> attr_alias_;
  std::vector<std::pair<Op*, int>> op_locs_;
  std::vector<std::pair<Value*, int>> value_locs_;
  std::vector<std::pair<Function*, int>> fn_locs_;
  std::vector<int> other_locs_;
  std::vector<std::pair<Op*, Op*>> implicit_;  // implicit scf.yield, its parent op
};

void Reader::run() {
  bool seen_module = false;
  for (;;) {
    ws();
    if (eof()) break;
    size_t s = p_;
    if (peek() == '#') {
      ++p_;
      std::string n = suffix_id("an alias name");
      expect('=', " in an alias definition");
      if (accept_kw("loc")) {
        expect('(', " after loc");
        int l = loc_expr();
        expect(')', " closing loc(");
        if (!loc_alias_.emplace(n, l).second) fail(s, fmt::format("redefinition of '#{}'", n));
      } else {
        ws();
        size_t a = p_;
        parse_attr();
        if (!attr_alias_.emplace(n, std::string(t_.substr(a, p_ - a))).second)
          fail(s, fmt::format("redefinition of '#{}'", n));
      }
      continue;
    }
    if (accept_kw("module")) {
      if (seen_module) fail(s, "more than one module");
      seen_module = true;
      module();
      continue;
    }
    expected("'module' or an alias definition '#name = ...'");
  }
  if (!seen_module) fail(p_, "no module found");
  // Locations last: aliases may be defined after their uses (reference §0.5).
  for (int l : other_locs_) resolve(l);
  for (auto& [f, l] : fn_locs_) f->loc = resolve(l);
  for (auto& [v, l] : value_locs_) v->loc = resolve(l);
  for (auto& [o, l] : op_locs_) o->loc = resolve(l);
  for (auto& [y, parent] : implicit_) y->loc = parent->loc;
}

}  // namespace

Module read(std::string_view text, const std::string& filename) {
  Module m;
  m.filename = filename;
  Reader r(text, m.filename, m);
  r.run();
  return m;
}

Module read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: cannot read file", path));
  return read(ss.str(), path);
}

}  // namespace tilescope::ir
