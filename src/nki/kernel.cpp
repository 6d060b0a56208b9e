// nki::Kernel: tensors, checked instructions, and running the programs under the analyses (nki.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

#include "machine.h"
#include "tilescope/ir/ops.h"
#include "tilescope/ir/verify.h"

namespace tilescope::nki {

int64_t View::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> element_indexes(const View& v) {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(v.numel(), 0)));
  if (out.empty()) return out;
  const size_t rank = v.shape.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t at = v.offset;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = at;
    for (size_t d = rank; d-- > 0;) {  // odometer, innermost dimension first
      if (++idx[d] < v.shape[d]) {
        at += v.strides[d];
        break;
      }
      at -= v.strides[d] * (v.shape[d] - 1);
      idx[d] = 0;
    }
  }
  return out;
}

namespace {

void verify_nothing(ir::Verifier&, const ir::Op&) {}  // instructions are checked when appended

/// The op registry's row for nki op `name` ("nki.isa.tensor_tensor"), registered once: NKI
/// instructions read and write memory through their operands' access patterns.
const ir::OpDef& op_def(std::string_view name) {
  static std::mutex mu;
  std::lock_guard<std::mutex> g(mu);
  if (const ir::OpDef* d = ir::find_op(name)) return *d;
  ir::OpDef def{};
  def.name = name;
  def.syntax = ir::Syntax::SameType;
  def.verify = verify_nothing;
  def.effects = ir::effect::read | ir::effect::write;
  def.taint = ir::Taint::none;
  return ir::register_op(def);
}

}  // namespace

Kernel::Impl::~Impl() {
  for (Storage& s : tensors)
    if (s.tracked) analysis::Definedness::process().forget(s.tracked);
}

const ir::Op* Kernel::Impl::site(std::string_view op_name, const ir::PyLoc& at) {
  const std::string full =
      std::string(op_name.find('.') == std::string_view::npos ? "nki.isa." : "") + std::string(op_name);
  const std::string key = fmt::format("{}@{}:{}:{}", full, at.file, at.line, at.col);
  if (auto it = sites.find(key); it != sites.end()) return it->second;
  auto op = std::make_unique<ir::Op>();
  op->def = &op_def(full);
  op->name = std::string(op->def->name);
  op->loc = at;
  op->parent = fn->body.blocks[0].get();
  op->pos = {static_cast<int>(fn->body.blocks[0]->ops.size()) + 1, 1};
  const ir::Op* p = op.get();
  fn->body.blocks[0]->ops.push_back(std::move(op));
  sites.emplace(key, p);
  return p;
}

void Kernel::Impl::fail(const std::string& message) const {
  const std::string where = loc.known() ? loc.str() + ": " : std::string();
  throw Error(fmt::format(
      "{}{}: {}", where,
      op.find('.') == std::string_view::npos ? "nki.isa." + std::string(op) : std::string(op), message));
}

std::map<int, std::pair<size_t, size_t>> Kernel::Impl::live_ranges(int program) const {
  const std::vector<Instr>& code = this->code[static_cast<size_t>(program)];
  std::map<int, std::pair<size_t, size_t>> live;
  for (size_t i = 0; i < code.size(); ++i)
    for (const Touch& t : code[i].touches) {
      if (tensors[static_cast<size_t>(t.tensor)].info.space == Space::hbm) continue;
      auto [it, fresh] = live.try_emplace(t.tensor, i, i);
      if (!fresh) it->second.second = i;
    }
  return live;
}

void Kernel::Impl::check_capacity(int program) const {
  const std::vector<Instr>& code = this->code[static_cast<size_t>(program)];
  const std::map<int, std::pair<size_t, size_t>> live = live_ranges(program);
  for (Space space : {Space::sbuf, Space::psum}) {
    const int64_t capacity = space == Space::psum ? target->psum_bytes : target->sbuf_bytes;
    // Bytes per partition that start and stop being live at each instruction.
    std::vector<int64_t> delta(code.size() + 1, 0);
    for (const auto& [t, range] : live) {
      const Storage& s = tensors[static_cast<size_t>(t)];
      if (s.info.space != space) continue;
      const int64_t per_partition = static_cast<int64_t>(s.bytes) / std::max<int64_t>(1, s.info.shape.at(0));
      delta[range.first] += per_partition;
      delta[range.second + 1] -= per_partition;
    }
    int64_t used = 0;
    for (size_t i = 0; i < code.size(); ++i) {
      used += delta[i];
      if (used <= capacity) continue;
      // The tensors live there, largest first; the tiles of one allocation line (a loop's) as one group.
      struct Group {
        int64_t bytes;  // per partition, each
        std::string name, where;
        int count;
      };
      std::vector<Group> at;
      size_t live_here = 0;
      for (const auto& [t, range] : live) {
        const Storage& s = tensors[static_cast<size_t>(t)];
        if (s.info.space != space || range.first > i || range.second < i) continue;
        ++live_here;
        const int64_t bytes = static_cast<int64_t>(s.bytes) / std::max<int64_t>(1, s.info.shape.at(0));
        const std::string where = s.info.loc.known() ? s.info.loc.str() : "?";
        auto g = std::find_if(at.begin(), at.end(), [&](const Group& x) {
          return x.bytes == bytes && x.name == s.info.name && x.where == where;
        });
        if (g == at.end())
          at.push_back({bytes, s.info.name, where, 1});
        else
          ++g->count;
      }
      std::stable_sort(at.begin(), at.end(),
                       [](const Group& a, const Group& b) { return a.bytes > b.bytes; });
      std::vector<std::string> names;
      for (size_t j = 0; j < at.size() && j < 8; ++j)
        names.push_back(at[j].count == 1
                            ? fmt::format("{} ({} bytes, {})", at[j].name, at[j].bytes, at[j].where)
                            : fmt::format("{} x {} ({} bytes each, {})", at[j].count, at[j].name, at[j].bytes,
                                          at[j].where));
      const ir::PyLoc& l = code[i].site->loc;
      throw Error(fmt::format(
          "{}{}: program {}: {} tensors live here need {} bytes per partition of {}, which "
          "holds {} on {}: {}{}",
          l.known() ? l.str() + ": " : "", code[i].site->name, program, live_here, used, space_name(space),
          capacity, target->name, fmt::join(names, ", "), at.size() > names.size() ? ", ..." : ""));
    }
  }
}

Storage& Kernel::Impl::storage(const View& v) { return tensors.at(static_cast<size_t>(v.tensor)); }
const Storage& Kernel::Impl::storage(const View& v) const {
  return tensors.at(static_cast<size_t>(v.tensor));
}

std::optional<View> Kernel::Impl::view(const Args& args, std::string_view key, bool required) {
  auto it = args.find(key);
  if (it == args.end() || std::holds_alternative<std::monostate>(it->second)) {
    if (required) fail(fmt::format("argument '{}' is required", key));
    return std::nullopt;
  }
  const View* v = std::get_if<View>(&it->second);
  if (!v) fail(fmt::format("argument '{}' must be a tensor (a tile of SBUF, PSUM or HBM)", key));
  if (v->tensor < 0 || v->tensor >= static_cast<int>(tensors.size()))
    fail(fmt::format("argument '{}' names no tensor of this kernel", key));
  if (v->shape.size() != v->strides.size())
    fail(fmt::format("argument '{}': {} sizes but {} strides", key, v->shape.size(), v->strides.size()));
  const Storage& s = tensors[static_cast<size_t>(v->tensor)];
  if (v->dynamic()) check_dynamic(*v, key);
  // Every element in bounds (the compiler rejects an out-of-range access pattern); a dynamic view's
  // runtime part is checked when it runs.
  int64_t lo = v->offset, hi = v->offset;
  for (size_t d = v->vector_offset ? 1 : 0; d < v->shape.size(); ++d) {
    if (v->shape[d] < 0) fail(fmt::format("argument '{}': a negative size", key));
    if (v->shape[d] == 0) {
      lo = hi = v->offset;
      break;
    }
    const int64_t span = v->strides[d] * (v->shape[d] - 1);
    (span < 0 ? lo : hi) += span;
  }
  const int64_t n = static_cast<int64_t>(s.bytes / static_cast<uint64_t>(s.info.dtype.bytes()));
  if (v->numel() > 0 && (lo < 0 || hi >= n))
    fail(fmt::format(
        "argument '{}': the access pattern reaches element {} of '{}', which has {} elements ({})", key,
        lo < 0 ? lo : hi, s.info.name, n, fmt::join(s.info.shape, "x")));
  return *v;
}

void Kernel::Impl::check_dynamic(const View& v, std::string_view key) {
  if (op != "dma_copy" && op != "load" && op != "store" && op != "tensor_copy")
    fail(
        fmt::format("argument '{}': dynamic offsets (.ap(scalar_offset=, vector_offset=)) are taken by "
                    "dma_copy and tensor_copy only",
                    key));
  const Storage& s = tensors[static_cast<size_t>(v.tensor)];
  if (v.indirect_dim < 0 || v.indirect_dim >= static_cast<int>(s.info.shape.size()))
    fail(fmt::format("argument '{}': indirect_dim {} is not a dimension of '{}' ({} dimensions)", key,
                     v.indirect_dim, s.info.name, s.info.shape.size()));
  auto index_tile = [&](const std::shared_ptr<const View>& t, const char* what, int64_t rows) {
    if (!t) return;
    if (t->dynamic()) fail(fmt::format("argument '{}': the {} is itself indexed dynamically", key, what));
    if (t->tensor < 0 || t->tensor >= static_cast<int>(tensors.size()))
      fail(fmt::format("argument '{}': the {} names no tensor of this kernel", key, what));
    const Storage& ts = tensors[static_cast<size_t>(t->tensor)];
    if (ts.info.space != Space::sbuf)
      fail(fmt::format("argument '{}': the {} must be a tile in SBUF, not in {}", key, what,
                       space_name(ts.info.space)));
    if (ts.info.dtype.is_float())
      fail(fmt::format("argument '{}': the {} must be of an integer dtype (int32, uint32), not {}", key, what,
                       ts.info.dtype.name));
    const int64_t free = t->shape.empty() ? 1 : t->numel() / std::max<int64_t>(1, t->shape[0]);
    if (t->shape.empty() || t->shape[0] != rows || free != 1)
      fail(fmt::format("argument '{}': the {} must be a [{}, 1] tile, not [{}]", key, what, rows,
                       fmt::join(t->shape, ", ")));
  };
  if (v.vector_offset) {
    if (s.info.space != Space::hbm)
      fail(fmt::format("argument '{}': vector_offset indexes an HBM tensor, not one in {}", key,
                       space_name(s.info.space)));
    if (v.indirect_dim != 0) fail(fmt::format("argument '{}': vector_offset takes indirect_dim=0 only", key));
    index_tile(v.vector_offset, "vector_offset", v.shape.empty() ? 1 : v.shape[0]);
  }
  index_tile(v.scalar_offset, "scalar_offset", 1);
}

double Kernel::Impl::number(const Args& args, std::string_view key, std::optional<double> fallback) {
  auto it = args.find(key);
  if (it == args.end() || std::holds_alternative<std::monostate>(it->second)) {
    if (!fallback) fail(fmt::format("argument '{}' is required", key));
    return *fallback;
  }
  const double* d = std::get_if<double>(&it->second);
  if (!d) fail(fmt::format("argument '{}' must be a number", key));
  return *d;
}

std::string Kernel::Impl::name_arg(const Args& args, std::string_view key,
                                   std::optional<std::string> fallback) {
  auto it = args.find(key);
  if (it == args.end() || std::holds_alternative<std::monostate>(it->second)) {
    if (!fallback) fail(fmt::format("argument '{}' is required", key));
    return *fallback;
  }
  const std::string* s = std::get_if<std::string>(&it->second);
  if (!s) fail(fmt::format("argument '{}' must be an operator or a name (e.g. nl.add)", key));
  return *s;
}

Space Kernel::Impl::space(const View& v, std::string_view key, std::initializer_list<Space> allowed) {
  const Space s = storage(v).info.space;
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    std::vector<std::string_view> names;
    for (Space a : allowed) names.push_back(space_name(a));
    fail(fmt::format("argument '{}' is in {}, but this op takes it only from {}", key, space_name(s),
                     fmt::join(names, " or ")));
  }
  return s;
}

std::pair<int64_t, int64_t> Kernel::Impl::tile(const View& v, std::string_view key) {
  if (v.shape.empty()) return {1, 1};
  const int64_t p = v.shape[0];
  if (storage(v).info.space != Space::hbm && p > target->partitions)
    fail(fmt::format("argument '{}' spans {} partitions; the partition dimension (dim 0) holds at most {}",
                     key, p, target->partitions));
  int64_t f = 1;
  for (size_t d = 1; d < v.shape.size(); ++d) f *= v.shape[d];
  return {p, f};
}

// ------------------------------------------------------------------------------------------------
// Kernel

Kernel::Kernel(std::string name, const Target& target, int64_t programs) : impl_(std::make_unique<Impl>()) {
  if (programs < 1)
    throw Error(fmt::format("kernel '{}': the grid needs at least one program, not {}", name, programs));
  impl_->name = std::move(name);
  impl_->target = &target;
  impl_->programs = programs;
  impl_->code.resize(static_cast<size_t>(programs));
  impl_->module.filename = impl_->name + ".nki";
  auto fn = std::make_unique<ir::Function>();
  fn->name = impl_->name;
  fn->body.blocks.push_back(std::make_unique<ir::Block>());
  fn->body.blocks[0]->parent = &fn->body;
  impl_->fn = fn.get();
  impl_->module.functions.push_back(std::move(fn));
}

Kernel::~Kernel() = default;

const Target& Kernel::target() const { return *impl_->target; }
int64_t Kernel::programs() const { return impl_->programs; }
const TensorInfo& Kernel::tensor(int id) const { return impl_->tensors.at(static_cast<size_t>(id)).info; }

int Kernel::add_argument(std::string name, const DType& dtype, std::byte* host, uint64_t bytes,
                         std::vector<int64_t> shape, std::vector<int64_t> strides) {
  Storage s;
  s.info.name = name;
  s.info.space = Space::hbm;
  s.info.dtype = dtype;
  s.info.shape = shape;
  s.bytes = bytes;
  exec::Buffer b;
  b.name = std::move(name);
  b.dtype = dtype.elem;
  b.host = host;
  b.bytes = bytes;
  b.shape = std::move(shape);
  b.strides = std::move(strides);
  s.buffer = impl_->memory.add(std::move(b));
  // The kernel's own argument: a value of its function, as a TTIR kernel's pointer argument is.
  auto v = std::make_unique<ir::Value>();
  v->name = s.info.name;
  v->type = impl_->module.ptr(impl_->module.scalar(dtype.elem));
  v->index = static_cast<int>(impl_->fn->body.blocks[0]->args.size());
  v->block = impl_->fn->body.blocks[0].get();
  impl_->fn->body.blocks[0]->args.push_back(std::move(v));
  impl_->tensors.push_back(std::move(s));
  return static_cast<int>(impl_->tensors.size()) - 1;
}

int Kernel::allocate(int program, std::string name, Space space, const DType& dtype,
                     std::vector<int64_t> shape, const ir::PyLoc& loc) {
  Impl& k = *impl_;
  k.op =
      space == Space::psum ? "nki.language.ndarray(buffer=nl.psum)" : "nki.language.ndarray(buffer=nl.sbuf)";
  k.loc = loc;
  if (program < 0 || program >= k.programs)
    k.fail(fmt::format("program {} is outside the grid of {}", program, k.programs));
  if (space == Space::hbm)
    k.fail("HBM tensors are the kernel's arguments and outputs, not on-chip allocations");
  if (shape.empty())
    k.fail("an on-chip tensor needs a partition dimension (a shape of at least one dimension)");
  for (int64_t d : shape)
    if (d <= 0) k.fail(fmt::format("shape ({}) has a size that is not positive", fmt::join(shape, ", ")));
  if (shape[0] > k.target->partitions)
    k.fail(fmt::format("shape ({}): the partition dimension (dim 0) is {}, more than the {} partitions of {}",
                       fmt::join(shape, ", "), shape[0], k.target->partitions, k.target->name));
  int64_t per_partition = dtype.bytes();
  for (size_t d = 1; d < shape.size(); ++d) per_partition *= shape[d];
  const int64_t capacity = space == Space::psum ? k.target->psum_bytes : k.target->sbuf_bytes;
  if (per_partition > capacity)
    k.fail(fmt::format("shape ({}) of {} takes {} bytes per partition; {} holds {} bytes per partition on {}",
                       fmt::join(shape, ", "), dtype.name, per_partition, space_name(space), capacity,
                       k.target->name));
  Storage s;
  s.info = {std::move(name), space, dtype, shape, program, loc};
  s.bytes = static_cast<uint64_t>(per_partition * shape[0]);
  s.owned = std::make_unique<std::byte[]>(s.bytes);
  // Undefined until written: the uninit analysis reports reads of it, naming this line.
  s.tracked = analysis::Definedness::process().track(
      s.owned.get(), s.bytes,
      {fmt::format("nl.ndarray(buffer=nl.{})", space_name(space)), loc.file, loc.line},
      ir::is_float(dtype.elem) ? analysis::Sentinel::float_nan : analysis::Sentinel::int_bytes);
  exec::Buffer b;
  b.name = s.info.name;
  b.dtype = dtype.elem;
  b.host = s.owned.get();
  b.bytes = s.bytes;
  b.shape = shape;
  b.strides.assign(shape.size(), 1);
  for (size_t d = shape.size() - 1; d > 0; --d) b.strides[d - 1] = b.strides[d] * shape[d];
  s.buffer = k.memory.add(std::move(b));
  k.tensors.push_back(std::move(s));
  return static_cast<int>(k.tensors.size()) - 1;
}

void Kernel::append(int program, std::string_view op, const Args& args, const ir::PyLoc& loc) {
  Impl& k = *impl_;
  k.op = op;
  k.loc = loc;
  if (k.ran) k.fail("the kernel has already run");
  if (program < 0 || program >= k.programs)
    k.fail(fmt::format("program {} is outside the grid of {}", program, k.programs));
  for (const auto& [key, value] : args)
    if (key == "mask" && !std::holds_alternative<std::monostate>(value))
      k.fail("the mask parameter is not supported (NKI Beta 2 removed masks; slice the tiles instead)");
  const OpSpec* spec = nullptr;
  for (const OpSpec& s : op_table())
    if (s.name == op) spec = &s;
  if (!spec) k.fail("not an operation tilescope knows (see the README's table of supported NKI ops)");
  std::function<void(Exec&)> run = spec->check(k, program, args);
  // What each operand reaches: the destinations (and reduce_res, dst_idx) are written, the rest read; a
  // dma_copy with dst_rmw_op also reads its destination.
  std::vector<Touch> touches;
  for (const auto& [key, value] : args) {
    const View* v = std::get_if<View>(&value);
    if (!v) continue;
    int64_t lo = v->offset, hi = v->offset;
    for (size_t d = 0; d < v->shape.size() && v->numel() > 0; ++d)
      (v->strides[d] < 0 ? lo : hi) += v->strides[d] * (v->shape[d] - 1);
    if (v->dynamic()) {  // anywhere in its tensor, known when it runs; its index tiles are read
      lo = 0;
      hi = static_cast<int64_t>(k.storage(*v).bytes /
                                static_cast<uint64_t>(k.storage(*v).info.dtype.bytes())) -
           1;
      for (const auto& t : {v->vector_offset, v->scalar_offset})
        if (t)
          touches.push_back(
              {t->tensor, t->offset,
               t->offset + std::max<int64_t>(0, t->numel() - 1) * (t->strides.empty() ? 1 : t->strides[0]),
               false});
    }
    const bool write = key == "dst" || key == "reduce_res" || key == "dst_idx";
    touches.push_back({v->tensor, lo, hi, write});
    if (write && key == "dst" && args.contains("dst_rmw_op") &&
        !std::holds_alternative<std::monostate>(args.at("dst_rmw_op")))
      touches.push_back({v->tensor, lo, hi, false});
  }
  k.code[static_cast<size_t>(program)].push_back(
      {k.site(op, loc), std::move(run), std::move(touches), estimate(k, op, args)});
}

const ir::Module& Kernel::module() const { return impl_->module; }

launch::LaunchRecord Kernel::record() const {
  const Impl& k = *impl_;
  launch::LaunchRecord r;
  r.kernel = k.name;
  r.ttir_file = k.module.filename;
  r.grid = {k.programs, 1, 1};
  for (const Storage& s : k.tensors) {
    if (s.info.program >= 0) continue;
    const exec::Buffer& b = k.memory.buffer(s.buffer);
    r.args.push_back(
        launch::ArgRecord::buffer(s.info.name, s.info.dtype.elem, b.host, b.bytes, b.shape, b.strides));
  }
  for (const auto& op : k.fn->body.blocks[0]->ops) {  // the file's name only: the listing is to read
    const ir::PyLoc& l = op->loc;
    const size_t slash = l.file.rfind('/');
    r.ttir += fmt::format("{}  # {}:{}:{}\n", op->name,
                          slash == std::string::npos ? l.file : l.file.substr(slash + 1), l.line, l.col);
  }
  return r;
}

std::vector<std::string_view> Kernel::ops() {
  std::vector<std::string_view> out;
  for (const OpSpec& s : op_table()) out.push_back(s.name);
  return out;
}

launch::RunResult Kernel::run(const launch::RunOptions& options) {
  Impl& k = *impl_;
  if (k.ran) throw Error(fmt::format("kernel '{}' has already run", k.name));
  k.ran = true;
  // The instructions of one program are ordered: the NKI compiler synchronizes the engines on every
  // dependency between them, so only accesses of different programs can race (no intra-program-race,
  // which is about a GPU program's lanes being threads).
  // The GPU profiler's model does not apply: a "profile" request gets the NKI profile (profile.cpp).
  launch::RunOptions o = options;
  const bool profiling =
      std::erase_if(o.analyses, [](const launch::AnalysisRequest& a) { return a.name == "profile"; }) > 0;
  for (launch::AnalysisRequest& a : o.analyses)
    if (a.name == "races") {
      if (!a.options.is_object()) a.options = nlohmann::json::object();
      a.options["intra"] = false;
    }
  for (int64_t p = 0; p < k.programs; ++p) k.check_capacity(static_cast<int>(p));
  launch::Analyses analyses(k.module, o);
  const std::vector<exec::Observer*>& observers = analyses.observers();
  std::atomic<bool> stop{false};
  exec::LaunchContext ctx(stop);
  ctx.module = &k.module;
  ctx.kernel = k.fn;
  ctx.grid = {k.programs, 1, 1};
  ctx.programs = k.programs;
  ctx.memory = &k.memory;
  ctx.threads = 1;
  {
    size_t a = 0;
    for (const Storage& s : k.tensors)
      if (s.info.program < 0 && a < k.fn->body.blocks[0]->args.size())
        ctx.args.push_back(
            {k.fn->body.blocks[0]->args[a++].get(), &k.memory.buffer(s.buffer), k.memory.vaddr(s.buffer)});
  }
  std::vector<unsigned> kinds;
  kinds.reserve(observers.size());
  for (exec::Observer* o : observers) kinds.push_back(o->on_launch_begin(ctx).kinds);
  launch::RunResult r;
  exec::LaunchStats stats;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    for (int64_t p = 0; p < k.programs && !ctx.stop_requested(); ++p) {
      if (options.cancel && options.cancel->load()) throw exec::Interrupted("interrupted");
      const exec::ProgramId pid{static_cast<int32_t>(p), 0, 0};
      std::vector<void*> states(observers.size(), nullptr);
      for (size_t i = 0; i < observers.size(); ++i)
        if (kinds[i] & exec::kProgram) states[i] = observers[i]->on_program_begin(pid);
      Exec ex(k, pid, observers, kinds, states);
      for (const Instr& in : k.code[static_cast<size_t>(p)]) {
        ex.begin(in.site);
        in.run(ex);
      }
      for (size_t i = 0; i < observers.size(); ++i)
        if (kinds[i] & exec::kProgram) observers[i]->on_program_end(pid, states[i]);
      ++stats.programs;
    }
  } catch (...) {
    for (exec::Observer* o : observers) o->on_launch_end(ctx, stats);
    throw;
  }
  stats.stopped = ctx.stop_requested();
  for (exec::Observer* o : observers) o->on_launch_end(ctx, stats);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.stats = stats;
  analyses.collect({k.name, {}}, r);
  if (profiling) r.reports["profile"] = profile();
  return r;
}

// ------------------------------------------------------------------------------------------------
// Exec

Exec::Lanes Exec::lanes(const View& v) {
  const Storage& s = k_.tensors.at(static_cast<size_t>(v.tensor));
  const uint64_t base = k_.memory.vaddr(s.buffer);
  const auto eb = static_cast<uint64_t>(s.info.dtype.bytes());
  Lanes out;
  std::vector<int64_t> idx = element_indexes(v);
  out.in.assign(idx.size(), 1);
  if (v.dynamic()) {
    // R: the elements of one step of the indirect dimension (the tensor's shape past it).
    int64_t row = 1;
    for (size_t d = static_cast<size_t>(v.indirect_dim) + 1; d < s.info.shape.size(); ++d)
      row *= s.info.shape[d];
    auto index_values = [&](const View& t) {
      const DType& dt = k_.tensors.at(static_cast<size_t>(t.tensor)).info.dtype;
      std::vector<int64_t> vals;
      for (uint64_t bits : read_bits(t)) vals.push_back(static_cast<int64_t>(to_float(dt, bits)));
      return vals;
    };
    if (v.scalar_offset) {
      const std::vector<int64_t> add = index_values(*v.scalar_offset);
      for (int64_t& x : idx) x += add.at(0) * row;
    }
    if (v.vector_offset) {
      // Row i0 at idx[i0] * R instead of i0 * strides[0].
      const std::vector<int64_t> rows = index_values(*v.vector_offset);
      const int64_t per_row = v.shape.empty() ? 0 : v.numel() / std::max<int64_t>(1, v.shape[0]);
      for (size_t i = 0; i < idx.size(); ++i) {
        const auto r = static_cast<size_t>(per_row ? static_cast<int64_t>(i) / per_row : 0);
        idx[i] += rows.at(r) * row - static_cast<int64_t>(r) * v.strides[0];
      }
    }
    const auto n = static_cast<int64_t>(s.bytes / eb);
    for (size_t i = 0; i < idx.size(); ++i)
      if (idx[i] < 0 || idx[i] >= n) {
        out.in[i] = 0;
        ++out.outside;
      }
  }
  out.addrs.resize(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) out.addrs[i] = base + static_cast<uint64_t>(idx[i]) * eb;
  return out;
}

void Exec::event(exec::AccessKind kind, const View& v, const std::vector<uint64_t>& addrs,
                 const std::vector<uint8_t>* mask, int64_t bad) {
  if (addrs.empty()) return;
  std::vector<uint8_t> all;
  if (!mask) {
    all.assign(addrs.size(), 1);
    mask = &all;
  }
  const exec::AccessEvent e{kind,
                            site,
                            pid_,
                            static_cast<int64_t>(addrs.size()),
                            addrs.data(),
                            mask->data(),
                            k_.tensors.at(static_cast<size_t>(v.tensor)).info.dtype.bytes(),
                            bad,
                            &k_.memory,
                            part_++};
  // Every access goes to kAccess observers; one with lanes outside its tensor to kOutOfBounds ones too.
  const unsigned want = bad > 0 ? exec::kAccess | exec::kOutOfBounds : exec::kAccess;
  for (size_t i = 0; i < observers_.size(); ++i)
    if (kinds_[i] & want) observers_[i]->on_access(e, states_[i]);
}

namespace {

/// Element `i`'s bytes at `p` as an unsigned integer of `eb` bytes (1, 2, 4 or 8), and back.
uint64_t load_bits(const std::byte* p, int eb) {
  switch (eb) {
    case 1: return static_cast<uint64_t>(*reinterpret_cast<const uint8_t*>(p));
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}
void store_bits(std::byte* p, int eb, uint64_t v) {
  switch (eb) {
    case 1: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v); return;
    case 2: {
      const auto w = static_cast<uint16_t>(v);
      std::memcpy(p, &w, 2);
      return;
    }
    case 4: {
      const auto w = static_cast<uint32_t>(v);
      std::memcpy(p, &w, 4);
      return;
    }
    default: std::memcpy(p, &v, 8); return;
  }
}

}  // namespace

std::vector<uint64_t> Exec::read_bits(const View& v, std::vector<uint8_t>* valid) {
  const Storage& s = k_.tensors.at(static_cast<size_t>(v.tensor));
  const Lanes l = lanes(v);
  const int eb = s.info.dtype.bytes();
  const exec::Buffer& b = k_.memory.buffer(s.buffer);
  std::vector<uint64_t> out(l.addrs.size(), 0);
  for (size_t i = 0; i < l.addrs.size(); ++i)
    if (l.in[i]) out[i] = load_bits(b.host + (l.addrs[i] - b.vbase), eb);
  // Elements outside the tensor: out-of-bounds lanes of the event, or, skipped, no lanes at all.
  event(exec::AccessKind::load, v, l.addrs, oob_skip ? &l.in : nullptr, oob_skip ? 0 : l.outside);
  if (valid) *valid = l.in;
  return out;
}

float Exec::to_float(const DType& t, uint64_t bits) {
  if (t.elem == ir::Elem::f32 || t.elem == ir::Elem::bf16) {  // the common cases, exactly
    const auto x = static_cast<uint32_t>(t.elem == ir::Elem::bf16 ? bits << 16 : bits);
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  if (t.is_float()) return static_cast<float>(ir::float_from_bits(t.elem, bits));
  const int b = 8 * t.bytes();
  if (t.is_unsigned || t.elem == ir::Elem::i1) return static_cast<float>(bits);
  const uint64_t sign = uint64_t{1} << (b - 1);
  const int64_t v = b == 64 ? static_cast<int64_t>(bits) : static_cast<int64_t>((bits ^ sign) - sign);
  return static_cast<float>(v);
}

uint64_t Exec::from_float(const DType& t, float f) {
  if (t.tf32) {  // 10 mantissa bits, round to nearest even (the low 13 bits of the float32 cleared)
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) <= 0x7f800000u) x = (x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu;
    return x;
  }
  if (t.elem == ir::Elem::f32) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return x;
  }
  if (t.is_float()) return ir::float_to_bits_f32(t.elem, f);
  // Integers: round to nearest even, saturate at the type's range, NaN -> 0 (the engines' fp32 ->
  // integer conversion on write).
  const int b = 8 * t.bytes();
  if (std::isnan(f)) return 0;
  const double r = std::nearbyint(static_cast<double>(f));
  if (t.elem == ir::Elem::i1) return r != 0;
  const double lo = t.is_unsigned ? 0 : -std::ldexp(1.0, b - 1);
  const double hi = t.is_unsigned ? std::ldexp(1.0, b) - 1 : std::ldexp(1.0, b - 1) - 1;
  const double c = std::clamp(r, lo, hi);
  const uint64_t mask = b == 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
  return static_cast<uint64_t>(static_cast<int64_t>(c)) & mask;
}

std::vector<float> Exec::read(const View& v, std::vector<uint8_t>* valid) {
  const DType& t = k_.tensors.at(static_cast<size_t>(v.tensor)).info.dtype;
  std::vector<uint64_t> bits = read_bits(v, valid);
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = to_float(t, bits[i]);
  return out;
}

void Exec::write_bits(const View& v, std::span<const uint64_t> bits, const std::vector<uint8_t>* keep) {
  const Storage& s = k_.tensors.at(static_cast<size_t>(v.tensor));
  Lanes l = lanes(v);
  const int eb = s.info.dtype.bytes();
  const exec::Buffer& b = k_.memory.buffer(s.buffer);
  std::vector<uint8_t> mask(l.addrs.size(), 1);  // the lanes written, and the outside ones reported
  int64_t bad = 0;
  for (size_t i = 0; i < l.addrs.size(); ++i) {
    if (keep && i < keep->size() && !(*keep)[i]) {
      mask[i] = 0;  // its source element was not read
      continue;
    }
    if (!l.in[i]) {
      mask[i] = oob_skip ? 0 : 1;
      bad += oob_skip ? 0 : 1;
      continue;
    }
    if (i < bits.size()) store_bits(b.host + (l.addrs[i] - b.vbase), eb, bits[i]);
  }
  event(exec::AccessKind::store, v, l.addrs, &mask, bad);
}

void Exec::write(const View& v, std::span<const float> values, const std::vector<uint8_t>* keep) {
  const DType& t = k_.tensors.at(static_cast<size_t>(v.tensor)).info.dtype;
  std::vector<uint64_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = from_float(t, values[i]);
  write_bits(v, bits, keep);
}

}  // namespace tilescope::nki
