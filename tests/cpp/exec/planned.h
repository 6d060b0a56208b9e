// A module read, verified and lowered by the planner, for tests that look at the plan itself: which
// slot a value has, where its storage is, which step an op became.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "src/exec/plan.h"
#include "tilescope/ir/reader.h"

namespace tilescope::test {

struct Planned {
  ir::Module m;
  exec::Plan plan;
  explicit Planned(const std::string& text) : m(ir::read(text, "t.ttir")) {
    ir::verify(m);
    plan.module = &m;
    exec::Planner planner(m, plan);
    planner.lower(*m.entry());
  }
  /// Bytes of one 64-byte-rounded slot per SSA value: the frame without storage sharing.
  int64_t naive_bytes() const {
    int64_t n = 0;
    for (const auto& s : plan.slots) n += (s.bytes + 63) / 64 * 64;
    return n;
  }
  /// The slot of the value written %name (a test failure and slot 0 when there is none).
  int slot(const std::string& name) const {
    for (size_t i = 0; i < plan.slot_value.size(); ++i)
      if (plan.slot_value[i]->name == name) return static_cast<int>(i);
    ADD_FAILURE() << "no value %" << name;
    return 0;
  }
  int64_t offset(const std::string& name) const { return plan.slot_offset[slot(name)]; }
  /// The step of the `k`-th op called `name` in the entry function's first block.
  const exec::Step& step(const std::string& name, int k = 0) const {
    const auto& steps = plan.functions.at(m.entry())->body.blocks[0].steps;
    for (const exec::Step& s : steps)
      if (s.op->name == name && k-- == 0) return s;
    ADD_FAILURE() << "no op " << name;
    return steps[0];
  }
};

}  // namespace tilescope::test
