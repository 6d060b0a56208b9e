// Test helpers: read TTIR text, register host vectors as buffers, run a launch.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "tilescope/exec/engine.h"
#include "tilescope/ir/reader.h"

namespace tilescope::test {

/// Register `bytes` at `host` (memory the test owns: a vector, an mmap) as a 1-D buffer of `elems`
/// elements of `e`; returns its id.
inline int add_buffer(exec::Memory& m, void* host, uint64_t bytes, int64_t elems, const std::string& name,
                      ir::Elem e) {
  exec::Buffer b;
  b.name = name;
  b.dtype = e;
  b.host = static_cast<std::byte*>(host);
  b.bytes = bytes;
  b.shape = {elems};
  b.strides = {1};
  return m.add(std::move(b));
}

template <class T>
int add_buffer(exec::Memory& m, std::vector<T>& v, const std::string& name, ir::Elem e) {
  return add_buffer(m, v.data(), v.size() * sizeof(T), static_cast<int64_t>(v.size()), name, e);
}

/// Read, verify and run `kernel` (default: the first public function) of `ttir` on `grid`.
inline exec::LaunchStats run_ttir(const std::string& ttir, const std::vector<exec::Arg>& args,
                                  exec::Memory& mem, std::array<int64_t, 3> grid = {1, 1, 1}, int threads = 1,
                                  std::vector<exec::Observer*> observers = {}) {
  ir::Module m = ir::read(ttir, "test.ttir");
  ir::verify(m);
  exec::Engine e(m);
  exec::LaunchOptions o;
  o.grid = grid;
  o.threads = threads;
  o.observers = std::move(observers);
  return e.launch(m.entry()->name, args, mem, o);
}

}  // namespace tilescope::test
