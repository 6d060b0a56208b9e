// Types (see parse_type.h).
#include "parse_type.h"

#include <fmt/format.h>

#include <cassert>

#include "parser.h"

namespace tilescope::ir {

namespace {

// Dims `16x32x` then an element type; the inside of tensor<...> and of !tt.tensordesc<16x32xf16>.
// MLIR lexes `16x32xf32` as the integer 16 and the identifier `x32xf32`; like MLIR's parser, each
// dimension is followed by an 'x' that starts the next token, and reading resumes after that 'x'.
const Type* tensor_body(Parser& p) {
  std::vector<int64_t> dims;
  int64_t numel = 1;
  for (;;) {
    if (p.at(Tok::Question)) p.fail(p.tok().off, "dynamic dimensions are not supported in TTIR");
    if (!starts_with_digit(p.tok())) break;
    size_t d = p.tok().off;
    int64_t v = p.parse_int();
    if (v > (int64_t(1) << 31)) p.fail(d, fmt::format("tensor dimension {} too large", v));
    numel *= v;
    if (numel > kMaxNumel) p.fail(d, "tensor has too many elements");
    const Token& x = p.tok();
    if (!(x.kind == Tok::Ident && p.adjacent() && x.text[0] == 'x'))
      p.expected("'x' after a tensor dimension");
    p.resume_at(x.off + 1);
    if (dims.size() >= 16) p.fail(d, "tensor rank above 16");
    dims.push_back(v);
  }
  size_t es = p.tok().off;
  const Type* e = parse_type(p);
  if (e->is_tensor) p.fail(es, "tensor element type cannot be a tensor");
  if (e->elem == Elem::tensordesc) p.fail(es, "tensor of tensor descriptors is not supported");
  if (p.at(Tok::Comma)) p.fail(p.tok().off, "tensor encodings (TTGIR layouts) are not supported in TTIR");
  Type t = *e;
  t.is_tensor = true;
  t.shape = std::move(dims);
  return p.m.intern(t);
}

// `<T>`: a pointer to T as custom formats print it (reference §3.1), or a descriptor (`as_desc`).
const Type* stripped_type(Parser& p, size_t s, bool as_desc) {
  p.expect(Tok::Less);
  if (as_desc && starts_with_digit(p.tok())) {
    // 3.8+ prints the descriptor as `<16x32xf32>` (no inner tensor<>; seen in triton 3.9.0 TTIR).
    const Type* blk = tensor_body(p);
    p.expect(Tok::Greater, " closing a stripped tensor descriptor type");
    return p.m.desc(blk);
  }
  const Type* in = parse_type(p);
  p.expect(Tok::Greater, " closing a stripped type");
  if (as_desc) {
    if (!in->is_tensor) p.fail(s, "tensor descriptor block type must be a tensor");
    return p.m.desc(in);
  }
  return p.m.ptr(in);
}

const Type* ptr_type(Parser& p, size_t s) {
  p.expect(Tok::Less, " after !tt.ptr");
  const Type* in = parse_type(p);
  if (in->elem == Elem::tensordesc) p.fail(s, "pointer to a tensor descriptor is not supported");
  int as = 1;
  if (p.accept(Tok::Comma)) as = p.small_int("address space", 0, 1 << 20);
  p.expect(Tok::Greater, " closing !tt.ptr");
  return p.m.ptr(in, as);
}

// `!tt.tensordesc<tensor<16x32xf16>>` (3.2-3.7) or `!tt.tensordesc<16x32xf16[, #layout]>` (3.8+).
const Type* desc_type(Parser& p, size_t s) {
  p.expect(Tok::Less, " after !tt.tensordesc");
  const Type* blk;
  if (p.at_kw("tensor")) {
    blk = parse_type(p);
    if (!blk->is_tensor) p.fail(s, "tensor descriptor block type must be a tensor");
  } else {
    blk = tensor_body(p);
  }
  if (p.accept(Tok::Comma)) {  // optional layout: ignored (no semantics in TTIR)
    if (!p.at(Tok::HashId)) p.expected("a layout");
    if (p.take().id().empty()) p.expected("a layout alias");
    if (p.at(Tok::Less)) p.skip_group();
  }
  p.expect(Tok::Greater, " closing !tt.tensordesc");
  return p.m.desc(blk);
}

const Type* dialect_type(Parser& p, size_t s) {
  Token bang = p.take();
  std::string n = bang.id().empty() ? p.ident("a dialect type name") : std::string(bang.id());
  if (n == "tt.ptr") return ptr_type(p, s);
  if (n == "tt.tensordesc") return desc_type(p, s);
  p.fail(s, fmt::format("unsupported type '!{}'", n));
}

// `tensor<...>` or a scalar. The name is letters, digits and '_' only: `f32.x` is f32, then `.x`.
const Type* builtin_type(Parser& p, size_t s) {
  const Token& t = p.tok();
  assert(t.kind == Tok::Ident);
  size_t len = 0;
  while (len < t.text.size() && t.text[len] != '.' && t.text[len] != '$') ++len;
  std::string n(t.text.substr(0, len));
  if (len < t.text.size())
    p.resume_at(t.off + len);
  else
    p.take();
  if (n == "tensor") {
    p.expect(Tok::Less, " after tensor");
    const Type* tt = tensor_body(p);
    p.expect(Tok::Greater, " closing tensor<");
    return tt;
  }
  if (auto e = elem_from_mlir(n)) return p.m.scalar(*e);
  // MLIR's signed / unsigned integer types (`si8`, `ui8`, `si32`, ...): Triton prints them as the
  // element type of a tensor descriptor or block pointer made from a signed or unsigned tensor.
  // Integers are signless on the engine (the ops say how to read them, as in TTIR), so `ui8` is i8.
  if (n.size() > 2 && (n[0] == 's' || n[0] == 'u') && n[1] == 'i')
    if (auto e = elem_from_mlir(std::string_view(n).substr(1)); e && ir::is_int(*e)) return p.m.scalar(*e);
  p.fail(s, fmt::format("unsupported type '{}'", n));
}

}  // namespace

const Type* parse_type(Parser& p, bool as_desc) {
  size_t s = p.tok().off;
  Parser::Depth d(p, s);
  if (p.at(Tok::Less)) return stripped_type(p, s, as_desc);
  if (p.at(Tok::BangId)) return dialect_type(p, s);
  if (!p.at(Tok::Ident)) p.expected("a type");
  return builtin_type(p, s);
}

std::vector<const Type*> type_list(Parser& p) {
  std::vector<const Type*> v{parse_type(p)};
  while (p.accept(Tok::Comma)) v.push_back(parse_type(p));
  return v;
}

std::vector<const Type*> paren_types(Parser& p) {
  p.expect(Tok::LParen);
  std::vector<const Type*> v;
  if (p.accept(Tok::RParen)) return v;
  v = type_list(p);
  p.expect(Tok::RParen, " closing a type list");
  return v;
}

std::vector<const Type*> result_types(Parser& p) {
  if (p.at(Tok::LParen)) return paren_types(p);
  return {parse_type(p)};
}

}  // namespace tilescope::ir
