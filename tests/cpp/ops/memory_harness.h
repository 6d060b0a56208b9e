// A hand-built Program for unit-testing memory kernels without the reader or the planner's walk:
// slots are allocated here, Steps are built by calling the op's lower hook directly.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/exec/access.h"
#include "src/exec/dispatch.h"
#include "src/exec/plan.h"
#include "src/ops/ops.h"
#include "tilescope/exec/value.h"

namespace memtest {

namespace ex = tilescope::exec;
namespace ir = tilescope::ir;
using ir::Elem;

/// Records every access event it receives (copies the lane arrays).
struct Recorder : ex::Observer {
  explicit Recorder(unsigned k) : k_(k) {}
  ex::Subscription on_launch_begin(const ex::LaunchContext&) override { return {k_, {}, {}}; }
  struct Ev {
    ex::AccessKind kind;
    int64_t lanes, bad;
    int elem_bytes;
    std::vector<uint64_t> addrs;
    std::vector<uint8_t> mask;
  };
  void on_access(const ex::AccessEvent& e, void*) override {
    std::lock_guard<std::mutex> g(mu);
    Ev v{e.kind, e.lanes, e.bad_lanes, e.elem_bytes, {}, {}};
    v.addrs.assign(e.addrs, e.addrs + e.lanes);
    EXPECT_NE(e.mask, nullptr);
    if (e.mask) v.mask.assign(e.mask, e.mask + e.lanes);
    events.push_back(std::move(v));
  }
  unsigned k_;
  std::mutex mu;
  std::vector<Ev> events;
};

struct Harness {
  ir::Module m;
  ex::Plan plan;
  ex::Planner planner{m, plan};
  ex::Memory mem;
  ex::LaunchStats stats;
  ex::Dispatch dispatch;
  ex::Program prog;
  std::vector<std::vector<uint64_t>> storage;
  std::vector<const ir::Type*> types;
  std::vector<std::unique_ptr<ir::Op>> ops;

  Harness() {
    m.filename = "test.ttir";
    prog.memory = &mem;
    prog.plan = &plan;
    prog.stats = &stats;
  }
  /// Deliver `r`'s kinds of events from the steps run here (what Engine::launch does at launch begin).
  void observe(Recorder* r) {
    dispatch.add(r, ex::Subscription{r->k_, {}, {}});
    prog.dispatch = &dispatch;
    prog.observed = dispatch.observed;
    prog.state.assign(dispatch.observers.size(), nullptr);
  }

  // Types
  const ir::Type* scalar(Elem e) { return m.scalar(e); }
  const ir::Type* tensor(Elem e, std::vector<int64_t> shape) { return m.tensor(e, std::move(shape)); }
  const ir::Type* ptr(Elem pointee) { return m.ptr(m.scalar(pointee)); }
  const ir::Type* ptr_tensor(Elem pointee, std::vector<int64_t> shape) {
    return m.tensor(Elem::ptr, std::move(shape), m.scalar(pointee));
  }
  const ir::Type* block_ptr(Elem e, std::vector<int64_t> shape) {
    return m.ptr(m.tensor(e, std::move(shape)));
  }
  const ir::Type* desc(Elem e, std::vector<int64_t> shape) { return m.desc(m.tensor(e, std::move(shape))); }

  // Slots
  int slot(const ir::Type* t) {
    int64_t bytes = ex::storage_bytes(*t);
    storage.emplace_back(static_cast<size_t>(bytes / 8 + 2), 0);
    types.push_back(t);
    prog.slot.push_back(reinterpret_cast<std::byte*>(storage.back().data()));
    // Slot pointers must stay valid: storage vectors are never resized after creation, but the outer
    // vector may move them; vectors keep their heap buffers when moved, so the pointers stay valid.
    return static_cast<int>(types.size()) - 1;
  }
  template <class T>
  int slot_of(const ir::Type* t, const std::vector<T>& v) {
    int s = slot(t);
    EXPECT_EQ(static_cast<int64_t>(v.size() * sizeof(T)), ex::storage_bytes(*t));
    std::memcpy(prog.slot[s], v.data(), v.size() * sizeof(T));
    return s;
  }
  template <class T>
  int scalar_slot(Elem e, T v) {
    return slot_of<T>(scalar(e), std::vector<T>{v});
  }
  template <class T>
  std::vector<T> get(int s) {
    int64_t bytes = ex::storage_bytes(*types[s]);
    std::vector<T> v(static_cast<size_t>(bytes) / sizeof(T));
    std::memcpy(v.data(), prog.slot[s], v.size() * sizeof(T));
    return v;
  }

  // Buffers
  template <class T>
  int buffer(const std::string& name, T* host, int64_t count, Elem e) {
    ex::Buffer b;
    b.name = name;
    b.dtype = e;
    b.host = reinterpret_cast<std::byte*>(host);
    b.bytes = static_cast<uint64_t>(count) * sizeof(T);
    b.shape = {count};
    b.strides = {1};
    return mem.add(b);
  }

  std::vector<std::unique_ptr<ir::Value>> values;  // operands of the ops built by step()

  // Ops
  ir::Op& op(const std::string& name) {
    ops.push_back(std::make_unique<ir::Op>());
    ops.back()->name = name;
    ops.back()->def = ir::find_op(name);
    EXPECT_NE(ops.back()->def, nullptr) << name;
    return *ops.back();
  }
  /// A step for `o` over slots `in` -> `out`, before lowering.
  ex::Step prepare(ir::Op& o, std::vector<int> in, std::vector<int> out) {
    ex::Step s;
    s.op = &o;
    s.in = in;
    s.out = out;
    // The op's operands and results as the reader would give them (the registry's operand roles and
    // the lowering read them): one value per slot, of the slot's type.
    o.operands.clear();
    o.results.clear();
    for (int i : in) {
      values.push_back(std::make_unique<ir::Value>());
      values.back()->type = types[i];
      o.operands.push_back(values.back().get());
    }
    for (int i : out) {
      o.results.push_back(std::make_unique<ir::Value>());
      o.results.back()->type = types[i];
    }
    for (int i : in) s.in_types.push_back(types[i]);
    for (int i : out) s.out_types.push_back(types[i]);
    s.n = !out.empty() ? types[out[0]]->numel() : types[in[0]]->numel();
    return s;
  }
  ex::Step step(ir::Op& o, std::vector<int> in, std::vector<int> out, tilescope::ops::LowerFn lower) {
    ex::Step s = prepare(o, std::move(in), std::move(out));
    lower(o, planner, s);
    EXPECT_NE(s.fn, nullptr);
    return s;
  }
  void run(const ex::Step& s) { s.fn(prog, s); }
};

inline ir::Attr keyword(const std::string& k) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::Keyword;
  a.s = k;
  return a;
}
inline ir::Attr integer(int64_t v) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::Int;
  a.i = v;
  return a;
}
inline ir::Attr int_array(std::vector<int64_t> v) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::IntArray;
  a.ints = std::move(v);
  return a;
}
inline ir::Attr boolean(bool b) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::Bool;
  a.b = b;
  return a;
}

}  // namespace memtest
