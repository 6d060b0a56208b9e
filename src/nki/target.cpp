// NKI targets and data types (nki.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "machine.h"

namespace tilescope::nki {

namespace {

// Architecture guides (nki/guides/architecture/trainium_inferentia2_arch.html, trainium2_arch.html,
// trainium3_arch.html): 128 partitions; SBUF 24 / 28 / 32 MiB; PSUM 2 MiB in 8 banks of 2 KiB per
// partition. Usable SBUF per partition: the compiler's tile_size.total_available_sbuf_size. Engine
// clocks: the guides' engine sections (Tensor 2.8 / 2.4 / 2.4 GHz, Vector 1.12 / 0.96 / 1.2, Scalar and
// GpSimd 1.4 / 1.2 / 1.2; trn2's GpSimd clock is not stated, taken as its Scalar engine's); DMA: the DMA
// overview (nki/get-started/about/nki-dma-overview.html), 17 / 23 / 33 bytes per ns per queue.
constexpr std::array<Target, 3> kTargets = {{
    {"trn1", 2, 128, 180224, 16384, 8, 2.8, 1.12, 1.4, 1.4, 17},
    {"trn2", 3, 128, 212984, 16384, 8, 2.4, 0.96, 1.2, 1.2, 23},
    {"trn3", 4, 128, 245752, 16384, 8, 2.4, 1.2, 1.2, 1.2, 33},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

const Target& target(std::string_view name) {
  const std::string n = lower(name);
  std::string alias = n;
  if (n == "gen2" || n == "inf2") alias = "trn1";
  if (n == "gen3") alias = "trn2";
  if (n == "gen4") alias = "trn3";
  for (const Target& t : kTargets)
    if (t.name == alias) return t;
  throw Error(fmt::format("unknown NKI target '{}' (trn1, trn2 or trn3)", name));
}

std::string_view space_name(Space s) {
  switch (s) {
    case Space::hbm: return "hbm";
    case Space::sbuf: return "sbuf";
    case Space::psum: return "psum";
  }
  return "?";
}

DType dtype(std::string_view name) {
  // nki.language's names first (nki-language guide, "Data types"), then numpy's / torch's spellings
  // of the same types. float8_e4m3 is NKI's own 8-bit format (4 exponent bits, 3 mantissa bits): stored
  // here with the OCP e4m3fn codec, the same up to 240 (NaN and values past 240 differ).
  struct Row {
    std::string_view name;
    ir::Elem elem;
    bool is_unsigned, tf32;
  };
  static constexpr Row kRows[] = {
      {"float32", ir::Elem::f32, false, false},
      {"tfloat32", ir::Elem::f32, false, true},
      {"bfloat16", ir::Elem::bf16, false, false},
      {"float16", ir::Elem::f16, false, false},
      {"float8_e4m3", ir::Elem::f8e4m3fn, false, false},
      {"float8_e4m3fn", ir::Elem::f8e4m3fn, false, false},
      {"float8_e5m2", ir::Elem::f8e5m2, false, false},
      {"int8", ir::Elem::i8, false, false},
      {"int16", ir::Elem::i16, false, false},
      {"int32", ir::Elem::i32, false, false},
      {"uint8", ir::Elem::i8, true, false},
      {"uint16", ir::Elem::i16, true, false},
      {"uint32", ir::Elem::i32, true, false},
      {"bool_", ir::Elem::i8, true, false},
      {"bool", ir::Elem::i8, true, false},
      {"float", ir::Elem::f32, false, false},
      {"half", ir::Elem::f16, false, false},
  };
  std::string n = lower(name);
  for (std::string_view prefix : {"nl.", "np.", "numpy.", "torch.", "ml_dtypes."})
    if (n.starts_with(prefix)) n = n.substr(prefix.size());
  for (const Row& r : kRows)
    if (r.name == n)
      return DType{std::string(r.name == "bool" ? "bool_" : r.name), r.elem, r.is_unsigned, r.tf32};
  throw Error(
      fmt::format("unsupported NKI dtype '{}' (float32, tfloat32, bfloat16, float16, float8_e4m3, "
                  "float8_e5m2, int8, int16, int32, uint8, uint16, uint32, bool_)",
                  name));
}

}  // namespace tilescope::nki
