// The launch record: JSON form and binding to a kernel's TTIR signature (see record.h).
#include "tilescope/launch/record.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tilescope/ir/diag.h"

namespace tilescope::launch {

ArgRecord ArgRecord::buffer(std::string name, ir::Elem dtype, std::byte* host, uint64_t bytes,
                            std::vector<int64_t> shape, std::vector<int64_t> strides) {
  ArgRecord a;
  a.kind = Kind::buffer;
  a.name = std::move(name);
  a.dtype = dtype;
  a.host = host;
  a.bytes = bytes;
  a.shape = std::move(shape);
  a.strides = std::move(strides);
  return a;
}

ArgRecord ArgRecord::scalar(std::string name, Scalar v) {
  ArgRecord a;
  a.kind = Kind::scalar;
  a.name = std::move(name);
  a.value = v;
  return a;
}

// ------------------------------------------------------------------------------------------------
// JSON

namespace {

using nlohmann::json;

const char* kind_name(ArgRecord::Kind k) {
  switch (k) {
    case ArgRecord::Kind::buffer: return "buffer";
    case ArgRecord::Kind::scalar: return "scalar";
    case ArgRecord::Kind::none: return "none";
  }
  return "?";
}

json scalar_json(const Scalar& v) {
  return std::visit([](auto x) { return json(x); }, v);
}

/// A field of `j` of JSON type `type` (a located error otherwise).
const json& field(const json& j, const char* key, json::value_t type, const std::string& where) {
  auto it = j.find(key);
  bool ok = it != j.end() && (it->type() == type || (type == json::value_t::number_integer &&
                                                     it->type() == json::value_t::number_unsigned));
  if (!ok)
    throw Error(
        fmt::format("launch record: {}'{}' is missing or not a {}", where, key, json(type).type_name()));
  return *it;
}

std::vector<int64_t> int_list(const json& j, const char* key, const std::string& where) {
  std::vector<int64_t> out;
  for (const json& x : field(j, key, json::value_t::array, where)) {
    // nlohmann keeps integers past INT64_MAX as unsigned: get<int64_t> would wrap them negative.
    if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t{INT64_MAX}))
      throw Error(fmt::format("launch record: {}'{}' must hold integers of 64 bits", where, key));
    out.push_back(x.get<int64_t>());
  }
  return out;
}

std::vector<std::string> string_list(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) throw Error(fmt::format("launch record: '{}' must be a list of strings", key));
  for (const json& x : *it) {
    if (!x.is_string()) throw Error(fmt::format("launch record: '{}' must be a list of strings", key));
    out.push_back(x.get<std::string>());
  }
  return out;
}

ArgRecord arg_from_json(const json& j, size_t i) {
  const std::string where = fmt::format("args[{}].", i);
  if (!j.is_object()) throw Error(fmt::format("launch record: args[{}] is not an object", i));
  ArgRecord a;
  a.name = field(j, "name", json::value_t::string, where).get<std::string>();
  const std::string kind = field(j, "kind", json::value_t::string, where).get<std::string>();
  if (kind == "buffer") {
    a.kind = ArgRecord::Kind::buffer;
    const std::string dt = field(j, "dtype", json::value_t::string, where).get<std::string>();
    auto e = ir::elem_from_mlir(dt);
    if (!e) throw Error(fmt::format("launch record: {}dtype '{}' is not an element type", where, dt));
    a.dtype = *e;
    a.shape = int_list(j, "shape", where);
    a.strides = int_list(j, "strides", where);
    const json& b = field(j, "bytes", json::value_t::number_integer, where);
    if (b.is_number_integer() && b.get<int64_t>() < 0)
      throw Error(fmt::format("launch record: {}bytes is negative", where));
    a.bytes = b.get<uint64_t>();
  } else if (kind == "scalar") {
    a.kind = ArgRecord::Kind::scalar;
    auto it = j.find("value");
    if (it == j.end()) throw Error(fmt::format("launch record: {}'value' is missing", where));
    if (it->is_boolean())
      a.value = it->get<bool>();
    else if (it->is_number_unsigned())
      a.value = it->get<uint64_t>();
    else if (it->is_number_integer())
      a.value = it->get<int64_t>();
    else if (it->is_number_float())
      a.value = it->get<double>();
    else
      throw Error(fmt::format("launch record: {}value must be a number or a boolean", where));
  } else if (kind == "none") {
    a.kind = ArgRecord::Kind::none;
  } else {
    throw Error(fmt::format("launch record: {}kind '{}' is not buffer, scalar or none", where, kind));
  }
  return a;
}

}  // namespace

json to_json(const LaunchRecord& r, bool with_ttir) {
  json args = json::array();
  for (const ArgRecord& a : r.args) {
    json x = {{"name", a.name}, {"kind", kind_name(a.kind)}};
    if (a.kind == ArgRecord::Kind::buffer) {
      x["dtype"] = ir::elem_name(a.dtype);
      x["shape"] = a.shape;
      x["strides"] = a.strides;
      x["bytes"] = a.bytes;
    } else if (a.kind == ArgRecord::Kind::scalar) {
      x["value"] = scalar_json(a.value);
    }
    args.push_back(std::move(x));
  }
  json constexprs = json::object();
  for (auto& [k, v] : r.specialization.constexprs) constexprs[k] = v;
  json j = {{"kernel", r.kernel},
            {"ttir_file", r.ttir_file},
            {"grid", r.grid},
            {"args", std::move(args)},
            {"specialization",
             {{"constexprs", std::move(constexprs)},
              {"divisible_by_16", r.specialization.divisible_by_16},
              {"equal_to_1", r.specialization.equal_to_1}}},
            {"stack", r.stack}};
  if (with_ttir) j["ttir"] = r.ttir;
  return j;
}

LaunchRecord record_from_json(const json& j) {
  if (!j.is_object()) throw Error("launch record: not a JSON object");
  LaunchRecord r;
  r.kernel = field(j, "kernel", json::value_t::string, "").get<std::string>();
  if (auto it = j.find("ttir"); it != j.end()) {
    if (!it->is_string()) throw Error("launch record: 'ttir' must be a string");
    r.ttir = it->get<std::string>();
  }
  if (auto it = j.find("ttir_file"); it != j.end() && it->is_string()) r.ttir_file = it->get<std::string>();
  std::vector<int64_t> grid = int_list(j, "grid", "");
  if (grid.empty() || grid.size() > 3)
    throw Error(fmt::format("launch record: the grid must have 1 to 3 dimensions, not {}", grid.size()));
  for (size_t d = 0; d < grid.size(); ++d) r.grid[d] = grid[d];
  try {
    exec::check_grid(r.grid);  // the same check as every launch (run_launch checks again)
  } catch (const Error& e) {
    throw Error(fmt::format("launch record: {}", e.what()));
  }
  const json& args = field(j, "args", json::value_t::array, "");
  for (size_t i = 0; i < args.size(); ++i) r.args.push_back(arg_from_json(args[i], i));
  if (auto it = j.find("specialization"); it != j.end()) {
    if (!it->is_object()) throw Error("launch record: 'specialization' must be an object");
    if (auto c = it->find("constexprs"); c != it->end()) {
      if (!c->is_object()) throw Error("launch record: 'specialization.constexprs' must be an object");
      for (auto& [k, v] : c->items())
        r.specialization.constexprs.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    r.specialization.divisible_by_16 = string_list(*it, "divisible_by_16");
    r.specialization.equal_to_1 = string_list(*it, "equal_to_1");
  }
  r.stack = string_list(j, "stack");
  return r;
}

// ------------------------------------------------------------------------------------------------
// Binding

namespace {

std::string show(const Scalar& v) {
  return std::visit([](auto x) { return fmt::format("{}", x); }, v);
}

/// The scalar `v` as the raw bits of the TTIR scalar type `t` (the engine's encoding: integers
/// sign-extended to 64 bits, floats in their format).
uint64_t scalar_bits(const ArgRecord& a, const ir::Type& t) {
  const Scalar& v = a.value;
  if (ir::is_float(t.elem)) {
    double d;
    if (auto* b = std::get_if<bool>(&v))
      d = *b ? 1.0 : 0.0;
    else if (auto* i = std::get_if<int64_t>(&v))
      d = static_cast<double>(*i);
    else if (auto* u = std::get_if<uint64_t>(&v))
      d = static_cast<double>(*u);
    else
      d = std::get<double>(v);
    if (t.elem == ir::Elem::f32) return exec::Arg::f32(static_cast<float>(d)).bits;
    if (t.elem == ir::Elem::f64) return exec::Arg::f64(d).bits;
    return ir::float_to_bits(t.elem, d);
  }
  if (std::holds_alternative<double>(v))
    throw Error(fmt::format("argument '{}': {} is not an integer, and the kernel's argument is {}", a.name,
                            show(v), t.str()));
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  if (t.elem == ir::Elem::i1) {
    const bool nonzero = std::visit([](auto x) { return x != decltype(x){0}; }, v);
    return nonzero ? 1 : 0;
  }
  const int bits = ir::elem_bits(t.elem);
  // Either the signed or the unsigned range of the width (TTIR is signless).
  bool fits;
  uint64_t raw;
  if (auto* i = std::get_if<int64_t>(&v)) {
    fits = bits >= 64 || (*i >= -(int64_t{1} << (bits - 1)) && *i < (int64_t{1} << bits));
    raw = static_cast<uint64_t>(*i);
  } else {
    const uint64_t u = std::get<uint64_t>(v);
    fits = bits >= 64 || u >> bits == 0;
    raw = u;
  }
  if (!fits) throw Error(fmt::format("argument '{}': {} does not fit in {}", a.name, show(v), t.str()));
  if (bits < 64) {  // wrap to the width, then sign-extend (the engine's scalar encoding)
    const uint64_t m = (uint64_t{1} << bits) - 1;
    raw &= m;
    if (raw >> (bits - 1)) raw |= ~m;
  }
  return raw;
}

}  // namespace

std::vector<exec::Arg> bind(const LaunchRecord& r, const ir::Function& kernel, exec::Memory& memory) {
  const auto& fargs = kernel.args();
  if (r.args.size() != fargs.size())
    throw Error(fmt::format("kernel '{}' takes {} runtime arguments in its TTIR signature, {} were given",
                            kernel.name, fargs.size(), r.args.size()));
  std::vector<exec::Arg> out;
  out.reserve(fargs.size());
  for (size_t i = 0; i < fargs.size(); ++i) {
    const ir::Type& t = *fargs[i]->type;
    const ArgRecord& a = r.args[i];
    const std::string& name = a.name.empty() ? fargs[i]->name : a.name;
    const bool wants_memory = (t.elem == ir::Elem::ptr || t.elem == ir::Elem::tensordesc) && !t.is_tensor;
    switch (a.kind) {
      case ArgRecord::Kind::none:
        throw Error(fmt::format("argument '{}' ({}) was passed None", name, t.str()));
      case ArgRecord::Kind::buffer: {
        if (!wants_memory)
          throw Error(
              fmt::format("argument '{}' is {} in the kernel, but a tensor was passed", name, t.str()));
        exec::Buffer b;
        b.name = name;
        b.dtype = a.dtype;
        b.host = a.host;
        b.bytes = a.bytes;
        b.shape = a.shape;
        b.strides = a.strides;
        if (!b.host && b.bytes > 0)
          throw Error(fmt::format(
              "argument '{}': the buffer has no memory (a record read back without its data)", name));
        out.push_back(exec::Arg::buf(memory.add(std::move(b))));
        break;
      }
      case ArgRecord::Kind::scalar:
        if (wants_memory || t.is_tensor || t.elem == ir::Elem::none)
          throw Error(
              fmt::format("argument '{}' is {} in the kernel, but a scalar was passed", name, t.str()));
        out.push_back(exec::Arg{exec::Arg::Kind::scalar, -1, scalar_bits(a, t)});
        break;
    }
  }
  return out;
}

}  // namespace tilescope::launch
