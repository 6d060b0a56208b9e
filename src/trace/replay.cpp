// The replay's memory and value capture (trace.h): a recorded launch run again from the trace alone.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "recorder.h"
#include "tilescope/exec/value.h"
#include "tilescope/ir/elem.h"
#include "tilescope/trace/trace.h"

namespace tilescope::trace {

using json = nlohmann::json;

ReplayMemory::ReplayMemory(StoredLaunch& s, const std::string& where) {
  if (s.language == "nki")
    throw Error(
        fmt::format("{}: an NKI kernel's launch cannot be replayed (its Python made its instructions; "
                    "run the program again)",
                    where));
  if (!s.record.allocations.empty())
    throw Error(
        fmt::format("{}: the kernel makes pointers from integers (addresses of the recorded process in "
                    "its arguments); replay cannot run it",
                    where));
  // Buffers that overlapped in the recorded process overlap again: one host block per group.
  struct Block {
    uint64_t start = 0, end = 0;
    std::vector<std::byte> data;
  };
  std::vector<Block> blocks;
  std::vector<size_t> order;
  for (size_t i = 0; i < s.record.args.size(); ++i) {
    if (s.record.args[i].kind != launch::ArgRecord::Kind::buffer) continue;
    if (!s.before[i])
      throw Error(
          fmt::format("{}: the contents of argument '{}' before the launch are not in the trace (the "
                      "trace budget dropped them; record again with a larger --trace-budget)",
                      where, s.record.args[i].name));
    if (s.before[i]->size() != s.record.args[i].bytes)
      throw Error(fmt::format(
          "{}: the stored contents of argument '{}' are {} bytes, not the {} the record says: the "
          "trace is damaged",
          where, s.record.args[i].name, s.before[i]->size(), s.record.args[i].bytes));
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.host_addr[a] < s.host_addr[b]; });
  std::vector<size_t> block_of(s.record.args.size(), 0);
  for (size_t i : order) {
    const uint64_t start = s.host_addr[i], end = start + s.record.args[i].bytes;
    if (blocks.empty() || start >= blocks.back().end || start == 0)
      blocks.push_back({start, end, {}});
    else
      blocks.back().end = std::max(blocks.back().end, end);
    block_of[i] = blocks.size() - 1;
  }
  for (Block& b : blocks) b.data.assign(b.end - b.start, std::byte{0});
  for (size_t i : order) {
    Block& b = blocks[block_of[i]];
    std::byte* host = b.data.data() + (s.host_addr[i] - b.start);
    std::copy(s.before[i]->begin(), s.before[i]->end(), host);
    s.record.args[i].host = host;
  }
  for (Block& b : blocks) blocks_.push_back(std::move(b.data));
}

namespace {

/// One value as JSON (trace.h, capture_values).
json value_json(const exec::ValueRef& v, int64_t max_elements) {
  const ir::Type& t = *v.type;
  json out = {{"type", t.str()}, {"shape", t.shape}, {"dtype", ir::elem_name(t.elem)}};
  const int64_t n = v.numel();
  const int64_t keep = std::min(n, max_elements);
  json values = json::array();
  auto number = [](double d) -> json {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    return d;
  };
  const ir::Elem e = t.elem;
  if (t.is_ptr() || e == ir::Elem::tensordesc) {
    values = nullptr;  // addresses of the replay, not the user's
  } else {
    for (int64_t i = 0; i < keep; ++i) {
      switch (e) {
        case ir::Elem::i1: values.push_back(v.as<uint8_t>()[i]); break;
        case ir::Elem::i8: values.push_back(v.as<int8_t>()[i]); break;
        case ir::Elem::i16: values.push_back(v.as<int16_t>()[i]); break;
        case ir::Elem::i32: values.push_back(v.as<int32_t>()[i]); break;
        case ir::Elem::i64: values.push_back(v.as<int64_t>()[i]); break;
        case ir::Elem::f32: values.push_back(number(v.as<float>()[i])); break;
        case ir::Elem::f64: values.push_back(number(v.as<double>()[i])); break;
        default:
          if (ir::elem_bytes(e) == 2)
            values.push_back(number(ir::float_from_bits(e, v.as<uint16_t>()[i])));
          else if (ir::elem_bytes(e) == 1)
            values.push_back(number(ir::float_from_bits(e, v.as<uint8_t>()[i])));
          else
            values = nullptr;
      }
      if (values.is_null()) break;
    }
  }
  out["values"] = values;
  out["truncated"] = keep < n;
  return out;
}

/// Keeps the operand and result values of the watched ops of one program.
class ValueCapture : public exec::Observer {
 public:
  ValueCapture(std::map<const ir::Op*, int> watched, exec::ProgramId pid, int max_executions,
               int64_t max_elements)
      : watched_(std::move(watched)),
        pid_(pid),
        max_executions_(max_executions),
        max_elements_(max_elements) {
    for (const auto& [op, site] : watched_)
      out_[site] = {{"site", site}, {"op", op->name}, {"executions", json::array()}, {"more", false}};
  }
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override {
    exec::Subscription s;
    s.kinds = exec::kOpResult;
    s.ops = [this](const ir::Op& op) -> const void* { return watched_.count(&op) ? &op : nullptr; };
    return s;
  }
  void on_op(const exec::OpEvent& e, void*) override {
    if (e.pid != pid_) return;
    std::lock_guard<std::mutex> g(
        mu_);  // one program runs on one thread at a time; other programs skip above
    json& site = out_[watched_.at(e.op)];
    json& execs = site["executions"];
    if (static_cast<int>(execs.size()) >= max_executions_) {
      site["more"] = true;
      return;
    }
    json ops = json::array(), res = json::array();
    for (size_t i = 0; i < e.op->operands.size(); ++i) ops.push_back(value_json(e.operand(i), max_elements_));
    for (size_t i = 0; i < e.op->results.size(); ++i) res.push_back(value_json(e.result(i), max_elements_));
    execs.push_back({{"seq", execs.size()}, {"operands", ops}, {"results", res}});
  }
  json result() const {
    json sites = json::array();
    for (const auto& [site, j] : out_) sites.push_back(j);
    return sites;
  }

 private:
  std::map<const ir::Op*, int> watched_;
  exec::ProgramId pid_;
  int max_executions_;
  int64_t max_elements_;
  std::mutex mu_;
  std::map<int, json> out_;
};

}  // namespace

json capture_values(const Reader& reader, int64_t launch_id, const std::array<int64_t, 3>& pid,
                    const std::vector<int>& sites, int max_executions, int64_t max_elements) {
  StoredLaunch s = reader.launch(launch_id);
  const std::string where = fmt::format("{}: launch {}", reader.path(), launch_id);
  for (int i = 0; i < 3; ++i)
    if (pid[i] < 0 || pid[i] >= s.record.grid[i])
      throw Error(fmt::format("{}: program ({}, {}, {}) is outside the grid", where, pid[0], pid[1], pid[2]));
  ReplayMemory memory(s, where);
  auto kernel =
      launch::compile(s.record.ttir, s.record.ttir_file.empty() ? "kernel.ttir" : s.record.ttir_file);
  const std::vector<const ir::Op*> all = op_sites(kernel->module());
  std::map<const ir::Op*, int> watched;
  for (int site : sites) {
    if (site < 0 || site >= static_cast<int>(all.size()))
      throw Error(fmt::format("{}: the kernel has no op site {} (it has {})", where, site, all.size()));
    watched[all[site]] = site;
  }
  const exec::ProgramId p{static_cast<int32_t>(pid[0]), static_cast<int32_t>(pid[1]),
                          static_cast<int32_t>(pid[2])};
  ValueCapture capture(std::move(watched), p, max_executions, max_elements);
  launch::RunOptions opts;
  opts.observers.push_back(&capture);
  launch::run_launch(*kernel, s.record, opts);
  return {{"pid", pid}, {"sites", capture.result()}};
}

}  // namespace tilescope::trace
