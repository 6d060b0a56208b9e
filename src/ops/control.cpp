// Structured control flow, calls, print and assert (reference §2.3, §1.6, §1.7).
#include <fmt/format.h>

#include <cassert>
#include <cstring>
#include <iostream>
#include <mutex>

#include "src/exec/value.h"
#include "src/ops/ops.h"

namespace tilescope::exec {
void parallel_copy(Program& p, const std::vector<int>& dst, const std::vector<int>& src);
}

namespace tilescope::ops {

using exec::parallel_copy;
using exec::Program;
using exec::Terminator;

namespace {

int64_t read_int(const Program& p, int slot, const ir::Type* t) {
  switch (t->elem) {
    case ir::Elem::i1:
    case ir::Elem::i8: return *p.at<int8_t>(slot);
    case ir::Elem::i16: return *p.at<int16_t>(slot);
    case ir::Elem::i32: return *p.at<int32_t>(slot);
    default: return *p.at<int64_t>(slot);
  }
}

void write_int(Program& p, int slot, const ir::Type* t, int64_t v) {
  switch (t->elem) {
    case ir::Elem::i1:
    case ir::Elem::i8: *p.at<int8_t>(slot) = static_cast<int8_t>(v); break;
    case ir::Elem::i16: *p.at<int16_t>(slot) = static_cast<int16_t>(v); break;
    case ir::Elem::i32: *p.at<int32_t>(slot) = static_cast<int32_t>(v); break;
    default: *p.at<int64_t>(slot) = v; break;
  }
}

// scf.for %iv = lb to ub step s iter_args(...): signed bounds of the IV's integer type; the
// body's entry block args are [iv, iter...]; results are the final iter values.
void run_for(Program& p, const Step& s) {
  const exec::RegionPlan& body = s.regions[0];
  const auto& args = body.blocks[0].args;
  const ir::Type* ivt = s.in_types[0];
  int64_t lb = read_int(p, s.in[0], ivt), ub = read_int(p, s.in[1], ivt), step = read_int(p, s.in[2], ivt);
  assert(args.size() == s.in.size() - 2);  // checked by lower_for
  std::vector<int> iter(args.begin() + 1, args.end());
  std::vector<int> init(s.in.begin() + 3, s.in.end());
  parallel_copy(p, iter, init);
  if (step <= 0 && lb < ub)
    fail_at(*p.plan->module, *s.op, fmt::format("scf.for step is {}: it must be positive", step));
  for (int64_t iv = lb; iv < ub; iv += step) {
    write_int(p, args[0], ivt, iv);
    const Terminator& t = p.run(body);
    assert(t.operands.size() == iter.size());  // the verifier: yield types == iter_args types
    parallel_copy(p, iter, t.operands);
  }
  parallel_copy(p, s.out, iter);
}

void run_if(Program& p, const Step& s) {
  bool c = *p.at<uint8_t>(s.in[0]) != 0;
  const exec::RegionPlan* r = nullptr;
  if (c)
    r = &s.regions[0];
  else if (s.regions.size() > 1 && !s.regions[1].blocks.empty())
    r = &s.regions[1];
  if (!r) return;
  const Terminator& t = p.run(*r);
  parallel_copy(p, s.out, t.operands);
}

void run_while(Program& p, const Step& s) {
  const exec::RegionPlan& before = s.regions[0];
  const exec::RegionPlan& after = s.regions[1];
  parallel_copy(p, before.blocks[0].args, s.in);
  for (;;) {
    const Terminator& c = p.run(before);
    assert(c.kind == Terminator::Kind::condition);  // the verifier: before ends in scf.condition
    if (!*p.at<uint8_t>(c.cond)) {
      parallel_copy(p, s.out, c.operands);
      return;
    }
    parallel_copy(p, after.blocks[0].args, c.operands);
    const Terminator& y = p.run(after);
    parallel_copy(p, before.blocks[0].args, y.operands);
  }
}

void run_call(Program& p, const Step& s) {
  assert(s.callee);  // set by lower_call
  const exec::RegionPlan& body = s.callee->body;
  parallel_copy(p, body.blocks[0].args, s.in);
  const Terminator& t = p.run(body);
  parallel_copy(p, s.out, t.operands);
}

void run_nop(Program&, const Step&) {}

}  // namespace

void lower_for(const Op& op, Planner& pl, Step& s) {
  if (s.in.size() < 3 || s.regions.size() != 1 || s.regions[0].blocks.empty())
    pl.unsupported(op, "malformed scf.for");
  if (s.regions[0].blocks[0].args.size() != s.in.size() - 2)
    pl.unsupported(op, "scf.for block arguments do not match");
  s.fn = run_for;
}

void lower_if(const Op& op, Planner& pl, Step& s) {
  if (s.regions.empty()) pl.unsupported(op, "scf.if without a then region");
  s.fn = run_if;
}

void lower_while(const Op& op, Planner& pl, Step& s) {
  if (s.regions.size() != 2) pl.unsupported(op, "scf.while needs a before and an after region");
  s.fn = run_while;
}

void lower_call(const Op& op, Planner& pl, Step& s) {
  const ir::Attr* callee = op.attr("callee");
  const ir::Function* f = callee ? pl.module().find(callee->s) : nullptr;
  if (!f) pl.unsupported(op, fmt::format("call to unknown function '@{}'", callee ? callee->s : "?"));
  s.callee = &pl.lower(*f);
  s.fn = run_call;
}

void lower_nop(const Op&, Planner&, Step& s) { s.fn = run_nop; }

// ---------------------------------------------------------------------------------------------
// tt.print: one line per element, as the GPU prints (reference §5 last row):
// `pid (x, y, z) idx (i, j) <prefix><value>`. Lines of one print op of one program stay together.

namespace {

std::mutex g_print_mu;

std::string format_value(const Program& p, int slot, const ir::Type* t, int64_t i, bool hex, bool is_signed) {
  const std::byte* base = p.slot[slot];
  ir::Elem e = t->elem;
  if (ir::is_float(e)) {
    double v;
    if (e == ir::Elem::f32) {
      float f;
      std::memcpy(&f, base + 4 * i, 4);
      v = f;
    } else if (e == ir::Elem::f64)
      std::memcpy(&v, base + 8 * i, 8);
    else {
      uint64_t bits = 0;
      std::memcpy(&bits, base + i * ir::elem_bytes(e), static_cast<size_t>(ir::elem_bytes(e)));
      v = ir::float_from_bits(e, bits);
    }
    return hex ? fmt::format("{:a}", v) : fmt::format("{:f}", v);
  }
  if (e == ir::Elem::ptr) {
    uint64_t a;
    std::memcpy(&a, base + 8 * i, 8);
    return fmt::format("0x{:x}", a);
  }
  int nb = ir::elem_bytes(e);
  uint64_t u = 0;
  std::memcpy(&u, base + i * nb, static_cast<size_t>(nb));
  int bits = ir::elem_bits(e);
  if (bits < 64) u &= (uint64_t{1} << bits) - 1;
  if (hex) return fmt::format("0x{:0{}x}", u, std::max(1, nb * 2));
  if (is_signed && bits < 64 && (u >> (bits - 1)) & 1)
    return fmt::format("{}", static_cast<int64_t>(u | ~((uint64_t{1} << bits) - 1)));
  if (is_signed) return fmt::format("{}", static_cast<int64_t>(u));
  return fmt::format("{}", u);
}

void run_print(Program& p, const Step& s) {
  const Op& op = *s.op;
  const ir::Attr* pre = op.attr("prefix");
  const ir::Attr* hexa = op.attr("hex");
  const ir::Attr* sg = op.attr("isSigned");
  bool hex = hexa && hexa->b;
  std::string out;
  std::string pid = fmt::format("pid ({}, {}, {})", p.pid[0], p.pid[1], p.pid[2]);
  if (s.in.empty()) out = fmt::format("{} {}\n", pid, pre ? pre->s : "");
  for (size_t a = 0; a < s.in.size(); ++a) {
    const ir::Type* t = s.in_types[a];
    bool is_signed = !sg || a >= sg->ints.size() || sg->ints[a] != 0;
    int64_t n = t->numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i;
      std::vector<int64_t> coord(t->shape.size());
      for (int d = static_cast<int>(t->shape.size()) - 1; d >= 0; --d) {
        coord[d] = rem % t->shape[d];
        rem /= t->shape[d];
      }
      const std::string idx = coord.empty() ? "0" : fmt::format("{}", fmt::join(coord, ", "));
      out += fmt::format("{} idx ({}){}{}\n", pid, idx, pre ? pre->s : "",
                         format_value(p, s.in[a], t, i, hex, is_signed));
    }
  }
  if (p.observed & exec::kPrint) {
    exec::PrintEvent e{&op, p.pid, out};
    for (exec::Observer* o : *p.observers)
      if (o->kinds() & exec::kPrint) o->on_print(e);
  }
  std::lock_guard<std::mutex> g(g_print_mu);
  std::cout << out << std::flush;
}

// tt.assert: the GPU stops the kernel with "Assertion `msg` failed" per failing thread; we report
// the failing lanes (count and first) and keep running so every finding is seen.
void run_assert(Program& p, const Step& s) {
  const uint8_t* c = p.at<uint8_t>(s.in[0]);
  int64_t n = s.in_types[0]->numel(), failed = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (!c[i]) {
      if (first < 0) first = i;
      ++failed;
    }
  if (!failed) return;
  p.stats->failed_asserts += 1;
  const ir::Attr* m = s.op->attr("message");
  exec::AssertEvent e{s.op, p.pid, m ? m->s : "", failed, first};
  if (p.observed & exec::kAssert) {
    for (exec::Observer* o : *p.observers)
      if (o->kinds() & exec::kAssert) o->on_assert(e);
    return;
  }
  std::lock_guard<std::mutex> g(g_print_mu);
  std::cerr << fmt::format("{}: program ({}, {}, {}) lane {}: Assertion `{}` failed ({} lanes)\n",
                           s.op->loc.known() ? s.op->loc.str() : "kernel", p.pid[0], p.pid[1], p.pid[2],
                           first, e.message, failed);
}

}  // namespace

void lower_print(const Op&, Planner&, Step& s) { s.fn = run_print; }

void lower_assert(const Op& op, Planner& pl, Step& s) {
  if (s.in.empty() || s.in_types[0]->elem != ir::Elem::i1)
    pl.unsupported(op, "tt.assert needs an i1 condition");
  s.fn = run_assert;
}

}  // namespace tilescope::ops
