// Test helpers: read TTIR text, register host vectors as buffers, run a launch.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "tilescope/exec/engine.h"
#include "tilescope/ir/reader.h"

namespace tilescope::test {

template <class T>
int add_buffer(exec::Memory& m, std::vector<T>& v, const std::string& name, ir::Elem e) {
  exec::Buffer b;
  b.name = name;
  b.dtype = e;
  b.host = reinterpret_cast<std::byte*>(v.data());
  b.bytes = v.size() * sizeof(T);
  b.shape = {static_cast<int64_t>(v.size())};
  b.strides = {1};
  return m.add(std::move(b));
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
