// Helpers for the shape / reduce / dot tests: generate small TTIR kernels that load whole tiles from
// buffers (row-major, through make_range / expand_dims / broadcast / addptr), apply the op under test,
// and store the results; then run them on the engine with host vectors as buffers.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cpp/harness.h"
#include "tilescope/exec/engine.h"
#include "tilescope/ir/ir.h"

namespace shapetest {

namespace ts = tilescope;
using ts::ir::Elem;

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string r;
  for (int64_t d : s) r += fmt::format("{}x", d);
  return r;
}

/// "tensor<4x8xf32>", or the element alone for an empty shape (a scalar).
inline std::string ty(const std::string& elem, const std::vector<int64_t>& shape) {
  if (shape.empty()) return elem;
  return "tensor<" + shape_str(shape) + elem + ">";
}

/// A kernel under construction: pointer arguments in order, then body lines.
struct Kernel {
  std::vector<std::string> args;
  std::string body;
  int n = 0;

  std::string fresh() { return fmt::format("%v{}", n++); }
  std::string line(const std::string& rhs) {
    std::string v = fresh();
    body += "    " + v + " = " + rhs + "\n";
    return v;
  }
  void raw(const std::string& l) { body += "    " + l + "\n"; }
  std::string arg(const std::string& elem) {
    std::string a = fmt::format("%arg{}", args.size());
    args.push_back(a + ": !tt.ptr<" + elem + ">");
    return a;
  }
  std::string c32(int64_t v) { return line(fmt::format("arith.constant {} : i32", v)); }

  /// Row-major linear offsets (i32) of a tile of `shape` (rank >= 1).
  std::string offsets(const std::vector<int64_t>& shape) {
    const int r = static_cast<int>(shape.size());
    std::string acc;
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; --d) {
      std::string v = line(fmt::format("tt.make_range {{end = {} : i32, start = 0 : i32}} : tensor<{}xi32>",
                                       shape[d], shape[d]));
      std::vector<int64_t> cur{shape[d]};
      // Insert unit dims before (d of them) and after (r - 1 - d).
      for (int k = 0; k < d; ++k) {
        std::vector<int64_t> nxt = cur;
        nxt.insert(nxt.begin(), 1);
        v = line(fmt::format("tt.expand_dims {} {{axis = 0 : i32}} : {} -> {}", v, ty("i32", cur),
                             ty("i32", nxt)));
        cur = nxt;
      }
      for (int k = d + 1; k < r; ++k) {
        std::vector<int64_t> nxt = cur;
        nxt.push_back(1);
        v = line(fmt::format("tt.expand_dims {} {{axis = {} : i32}} : {} -> {}", v, nxt.size() - 1,
                             ty("i32", cur), ty("i32", nxt)));
        cur = nxt;
      }
      if (stride != 1) {
        std::string c = c32(stride);
        std::string sp = line(fmt::format("tt.splat {} : i32 -> {}", c, ty("i32", cur)));
        v = line(fmt::format("arith.muli {}, {} : {}", v, sp, ty("i32", cur)));
      }
      if (cur != shape)
        v = line(fmt::format("tt.broadcast {} : {} -> {}", v, ty("i32", cur), ty("i32", shape)));
      acc = acc.empty() ? v : line(fmt::format("arith.addi {}, {} : {}", acc, v, ty("i32", shape)));
      stride *= shape[d];
    }
    return acc;
  }

  std::string ptrs(const std::string& base, const std::string& elem, const std::vector<int64_t>& shape) {
    std::string pt = ty("!tt.ptr<" + elem + ">", shape);
    std::string sp = line(fmt::format("tt.splat {} : !tt.ptr<{}> -> {}", base, elem, pt));
    std::string off = offsets(shape);
    return line(fmt::format("tt.addptr {}, {} : {}, {}", sp, off, pt, ty("i32", shape)));
  }

  /// Load a whole tile (or a scalar for an empty shape) of `elem` from a new pointer argument.
  std::string load(const std::string& elem, const std::vector<int64_t>& shape) {
    std::string a = arg(elem);
    if (shape.empty()) return line(fmt::format("tt.load {} : !tt.ptr<{}>", a, elem));
    std::string p = ptrs(a, elem, shape);
    return line(fmt::format("tt.load {} : {}", p, ty("!tt.ptr<" + elem + ">", shape)));
  }
  /// Store a tile (or scalar) to a new pointer argument.
  void store(const std::string& v, const std::string& elem, const std::vector<int64_t>& shape) {
    std::string a = arg(elem);
    if (shape.empty()) {
      raw(fmt::format("tt.store {}, {} : !tt.ptr<{}>", a, v, elem));
      return;
    }
    std::string p = ptrs(a, elem, shape);
    raw(fmt::format("tt.store {}, {} : {}", p, v, ty("!tt.ptr<" + elem + ">", shape)));
  }

  std::string text() const {
    std::string a;
    for (size_t i = 0; i < args.size(); ++i) a += (i ? ", " : "") + args[i];
    return "module {\n  tt.func public @k(" + a + ") attributes {noinline = false} {\n" + body +
           "    tt.return\n  }\n}\n";
  }
};

/// A host buffer of raw bytes with its TTIR element type.
struct Buf {
  std::vector<uint8_t> bytes;
  Elem elem;
  template <class T>
  static Buf of(const std::vector<T>& v, Elem e) {
    Buf b{std::vector<uint8_t>(v.size() * sizeof(T) + (v.empty() ? 1 : 0)), e};
    if (!v.empty()) std::memcpy(b.bytes.data(), v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T>
  static Buf zeros(size_t n, Elem e) {
    return of(std::vector<T>(n, T{}), e);
  }
  template <class T>
  std::vector<T> as() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

/// Run kernel `k` with `bufs` bound to its pointer arguments in order.
inline void run(const Kernel& k, std::vector<Buf*> bufs, std::array<int64_t, 3> grid = {1, 1, 1}) {
  ts::exec::Memory mem;
  std::vector<ts::exec::Arg> args;
  for (size_t i = 0; i < bufs.size(); ++i) {
    ts::exec::Buffer b;
    b.name = fmt::format("arg{}", i);
    b.dtype = bufs[i]->elem;
    b.host = reinterpret_cast<std::byte*>(bufs[i]->bytes.data());
    b.bytes = bufs[i]->bytes.size();
    int eb = ts::ir::elem_bytes(bufs[i]->elem);
    b.shape = {static_cast<int64_t>(bufs[i]->bytes.size()) / (eb ? eb : 1)};
    b.strides = {1};
    args.push_back(ts::exec::Arg::buf(mem.add(std::move(b))));
  }
  ts::test::run_ttir(k.text(), args, mem, grid);
}

}  // namespace shapetest
