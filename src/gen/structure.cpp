// Pass 1 of gen::parse: the document's structure, checked from the op table exactly as the generated
// schema (schema.cpp) states it, so that a document passes here exactly when it is valid under the schema
// (tests/python/test_gen.py checks both with an independent validator). No C++ JSON Schema validator is
// used: CONTRIBUTING.md, "Dependencies", says why.
#include <fmt/format.h>

#include <cmath>
#include <set>

#include "passes.h"
#include "table.h"

namespace tilescope::gen::detail {

std::string child(const std::string& base, std::string_view token) {
  std::string s = base + "/";
  for (char c : token) {
    if (c == '~')
      s += "~0";
    else if (c == '/')
      s += "~1";
    else
      s += c;
  }
  return s;
}

std::string describe(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return fmt::format("an array of {}", j.size());
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::discarded: return "nothing";
    default: break;
  }
  std::string s = j.dump();
  if (s.size() > 48) s = s.substr(0, 45) + "...";
  return s;
}

bool as_int(const nlohmann::json& j, int64_t& out) {
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
    out = j.get<int64_t>();
    return true;
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      out = static_cast<int64_t>(d);
      return true;
    }
  }
  return false;
}

namespace {

std::string name_rule(size_t max = kMaxNameLength) {
  return fmt::format("a name ([A-Za-z_][A-Za-z0-9_]*, at most {} characters)", max);
}

std::string join(const std::vector<const char*>& v) {
  std::string s;
  for (const char* x : v) s += fmt::format("{}{}", s.empty() ? "" : ", ", std::string(x));
  return s;
}

class Reader {
 public:
  explicit Reader(Problems& p) : p_(p) {}

  bool name(const nlohmann::json& j, const std::string& ptr, std::string& out, size_t max = kMaxNameLength) {
    if (j.is_string() && is_name(j.get<std::string>(), max)) {
      out = j.get<std::string>();
      return true;
    }
    p_.add(ptr, "not a valid name", name_rule(max), describe(j));
    return false;
  }

  bool names(const nlohmann::json& j, const std::string& ptr, std::vector<std::string>& out,
             size_t max_items) {
    if (!j.is_array() || j.size() > max_items) {
      p_.add(ptr, "not a list of names", fmt::format("an array of at most {} names", max_items), describe(j));
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < j.size(); ++i) {
      std::string s;
      ok = name(j[i], child(ptr, i), s) && ok;
      out.push_back(s);
    }
    return ok;
  }

  bool integer(const nlohmann::json& j, const std::string& ptr, int64_t lo, int64_t hi, int64_t& out) {
    if (as_int(j, out) && out >= lo && out <= hi) return true;
    p_.add(ptr, "integer out of range or not an integer", fmt::format("an integer in {}..{}", lo, hi),
           describe(j));
    return false;
  }

  bool choice(const nlohmann::json& j, const std::string& ptr, const std::vector<const char*>& choices,
              std::string& out) {
    if (j.is_string())
      for (const char* c : choices)
        if (j.get<std::string>() == c) {
          out = c;
          return true;
        }
    p_.add(ptr, "not one of the choices", "one of " + join(choices), describe(j));
    return false;
  }

  bool dtype(const nlohmann::json& j, const std::string& ptr, Dtype& out, bool allow_i1 = true) {
    if (j.is_string())
      if (auto d = find_dtype(j.get<std::string>()); d && (allow_i1 || *d != Dtype::i1)) {
        out = *d;
        return true;
      }
    std::string all;
    for (int i = allow_i1 ? 0 : 1; i < kNumDtypes; ++i)
      all += fmt::format("{}{}", all.empty() ? "" : ", ", std::string(dtype_name(static_cast<Dtype>(i))));
    p_.add(ptr, allow_i1 ? "unknown dtype" : "unknown pointee dtype (i1 data is stored as i8)",
           "one of " + all, describe(j));
    return false;
  }

  // A dim: an integer in [lo, hi] or a name (a constexpr argument, resolved by pass 2).
  bool dim(const nlohmann::json& j, const std::string& ptr, int64_t lo, int64_t hi) {
    int64_t v = 0;
    if (j.is_string()) {
      std::string s;
      return name(j, ptr, s);
    }
    if (as_int(j, v) && v >= lo && v <= hi) return true;
    p_.add(ptr, "not a dim", fmt::format("an integer in {}..{} or the name of a constexpr argument", lo, hi),
           describe(j));
    return false;
  }

  // Check that `obj` has only `allowed` keys and has every `required` one.
  bool keys(const nlohmann::json& obj, const std::string& ptr, const std::vector<std::string>& allowed,
            const std::vector<std::string>& required, const std::string& what) {
    bool ok = true;
    for (const auto& [k, v] : obj.items()) {
      bool known = false;
      for (const auto& a : allowed) known = known || a == k;
      if (!known) {
        std::string list;
        for (const auto& a : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
        p_.add(child(ptr, k), fmt::format("unknown field '{}' of {}", k, what), "one of " + list,
               "'" + k + "'");
        ok = false;
      }
    }
    for (const auto& r : required)
      if (!obj.contains(r)) {
        p_.add(ptr, fmt::format("{} lacks the field '{}'", what, r), "'" + r + "'", "no such field");
        ok = false;
      }
    return ok;
  }

  void op(const nlohmann::json& j, const std::string& ptr, Op& o, bool& ok) {
    if (!j.is_object()) {
      p_.add(ptr, "an op must be an object", "an object with \"op\"", describe(j));
      ok = false;
      return;
    }
    if (!j.contains("op")) {
      p_.add(ptr, "an op lacks the field 'op'", "'op'", "no such field");
      ok = false;
      return;
    }
    const OpSpec* s = j["op"].is_string() ? find_op(j["op"].get<std::string>()) : nullptr;
    if (!s) {
      std::vector<const char*> all;
      for (const auto& r : op_table()) all.push_back(r.name);
      p_.add(child(ptr, "op"), "unknown op", "one of " + join(all), describe(j["op"]));
      ok = false;
      return;
    }
    o.kind = s->kind;
    o.pointer = ptr;
    std::vector<std::string> allowed = {"op"}, required = {"op"};
    const char* result_key = s->results == Results::many ? "results" : "result";
    if (s->results != Results::none) allowed.emplace_back(result_key);
    if (s->results == Results::one) required.emplace_back(result_key);
    if (!s->roles.empty()) {
      allowed.emplace_back("operands");
      required.emplace_back("operands");
    }
    for (const auto& f : s->fields) {
      allowed.emplace_back(f.key);
      if (f.required) required.emplace_back(f.key);
    }
    if (!keys(j, ptr, allowed, required, fmt::format("op '{}'", s->name))) ok = false;
    if (s->results == Results::many && j.contains("results")) {
      ok = names(j["results"], child(ptr, "results"), o.results, kMaxCarried) && ok;
    } else if (s->results != Results::none && s->results != Results::many && j.contains("result")) {
      std::string r;
      ok = name(j["result"], child(ptr, "result"), r) && ok;
      o.results.push_back(r);
    }
    if (!s->roles.empty() && j.contains("operands")) {
      const auto& ops = j["operands"];
      const size_t lo = s->min_operands, hi = s->roles.size();
      std::string roles;
      for (size_t i = 0; i < hi; ++i)
        roles += fmt::format("{}{}", i ? ", " : "", std::string(s->roles[i]) + (i >= lo ? "?" : ""));
      if (!ops.is_array() || ops.size() < lo || ops.size() > hi) {
        p_.add(child(ptr, "operands"), fmt::format("wrong operands for '{}' ({})", s->name, roles),
               lo == hi ? fmt::format("an array of {} names", lo)
                        : fmt::format("an array of {} to {} names", lo, hi),
               describe(ops));
        ok = false;
      } else {
        ok = names(ops, child(ptr, "operands"), o.operands, hi) && ok;
      }
    }
    for (const auto& f : s->fields)
      if (j.contains(f.key)) ok = field(f, j[f.key], child(ptr, f.key), o) && ok;
  }

  bool field(const FieldSpec& f, const nlohmann::json& j, const std::string& ptr, Op& o) {
    switch (f.type) {
      case FieldType::integer: return integer(j, ptr, f.min, f.max, o.axis);
      case FieldType::dtype: return dtype(j, ptr, o.dtype);
      case FieldType::literal:
        if (j.is_number()) {
          int64_t i = 0;
          if (j.is_number_integer() && as_int(j, i)) {
            o.value = {true, i, static_cast<double>(i)};
          } else {
            o.value = {false, 0, j.get<double>()};
          }
          return true;
        }
        if (j.is_string()) {
          const std::string s = j.get<std::string>();
          if (s == "inf" || s == "-inf" || s == "nan") {
            o.value = {false, 0, s == "nan" ? NAN : s == "inf" ? INFINITY : -INFINITY};
            return true;
          }
        }
        p_.add(ptr, "not a literal", "a number, \"inf\", \"-inf\" or \"nan\"", describe(j));
        return false;
      case FieldType::shape: {
        if (!j.is_array() || j.empty() || j.size() > static_cast<size_t>(kMaxDims)) {
          p_.add(ptr, "not a shape", fmt::format("an array of 1 to {} dims", kMaxDims), describe(j));
          return false;
        }
        bool ok = true;
        for (size_t i = 0; i < j.size(); ++i) ok = dim(j[i], child(ptr, i), f.min, f.max) && ok;
        return ok;
      }
      case FieldType::dim: return dim(j, ptr, f.min, f.max);
      case FieldType::int_list: {
        if (!j.is_array() || j.size() < 2 || j.size() > static_cast<size_t>(kMaxDims)) {
          p_.add(ptr, "not a list of integers", fmt::format("an array of 2 to {} integers", kMaxDims),
                 describe(j));
          return false;
        }
        bool ok = true;
        o.order.clear();
        for (size_t i = 0; i < j.size(); ++i) {
          int64_t v = 0;
          ok = integer(j[i], child(ptr, i), f.min, f.max, v) && ok;
          o.order.push_back(v);
        }
        return ok;
      }
      case FieldType::choice: {
        std::string v;
        if (!choice(j, ptr, f.choices, v)) return false;
        switch (f.field) {
          case Field::combine: o.combine = v; break;
          case Field::precision: o.precision = v; break;
          case Field::rmw: o.rmw = v; break;
          case Field::sem: o.sem = v; break;
          case Field::scope: o.scope = v; break;
          default: break;
        }
        return true;
      }
      case FieldType::boolean:
        if (j.is_boolean()) {
          o.reverse = j.get<bool>();
          return true;
        }
        p_.add(ptr, "not a boolean", "true or false", describe(j));
        return false;
      case FieldType::name: return name(j, ptr, f.field == Field::var ? o.var : o.cond);
      case FieldType::name_list:
        return names(j, ptr, f.field == Field::init ? o.init : o.carried, kMaxCarried);
      case FieldType::bound: {
        const size_t i = f.field == Field::lower ? 0 : f.field == Field::upper ? 1 : 2;
        o.bounds.resize(3);
        o.bound_literals.resize(3, Literal{false, 0, 0});
        if (j.is_string()) return name(j, ptr, o.bounds[i]);
        int64_t v = 0;
        if (as_int(j, v) && v >= f.min && v <= f.max) {
          o.bound_literals[i] = {true, v, static_cast<double>(v)};
          return true;
        }
        p_.add(ptr, "not a loop bound", fmt::format("a value name or an integer in {}..{}", f.min, f.max),
               describe(j));
        return false;
      }
      case FieldType::region: {
        // The region's name; pass 2 resolves it (Op::body / then_region / else_region hold -1 until then).
        std::string s;
        return name(j, ptr, s);
      }
    }
    return false;
  }

  void arg(const nlohmann::json& j, const std::string& ptr, Arg& a, bool& ok) {
    if (!j.is_object()) {
      p_.add(ptr, "an argument must be an object", "an object with name and kind", describe(j));
      ok = false;
      return;
    }
    std::string kind;
    if (!j.contains("kind") ||
        !choice(j["kind"], child(ptr, "kind"), {"pointer", "scalar", "constexpr"}, kind)) {
      if (!j.contains("kind")) p_.add(ptr, "an argument lacks the field 'kind'", "'kind'", "no such field");
      ok = false;
      return;
    }
    if (kind == "constexpr") {
      a.kind = Arg::Kind::constexpr_;
      ok = keys(j, ptr, {"name", "kind", "value"}, {"name", "kind", "value"}, "a constexpr argument") && ok;
      if (j.contains("value"))
        ok = integer(j["value"], child(ptr, "value"), INT32_MIN, INT32_MAX, a.value) && ok;
    } else {
      a.kind = kind == "pointer" ? Arg::Kind::pointer : Arg::Kind::scalar;
      ok = keys(j, ptr, {"name", "kind", "dtype"}, {"name", "kind", "dtype"},
                fmt::format("a {} argument", kind)) &&
           ok;
      if (j.contains("dtype")) ok = dtype(j["dtype"], child(ptr, "dtype"), a.dtype, kind != "pointer") && ok;
    }
    if (j.contains("name")) ok = name(j["name"], child(ptr, "name"), a.name) && ok;
  }

  void op_list(const nlohmann::json& j, const std::string& ptr, std::vector<Op>& out, bool& ok,
               size_t min_items) {
    if (!j.is_array() || j.size() < min_items || j.size() > static_cast<size_t>(kMaxOps)) {
      p_.add(ptr, "not a list of ops", fmt::format("an array of {} to {} ops", min_items, kMaxOps),
             describe(j));
      ok = false;
      return;
    }
    out.resize(j.size());
    for (size_t i = 0; i < j.size() && !p_.full(); ++i) op(j[i], child(ptr, i), out[i], ok);
  }

  void root(const nlohmann::json& doc, Ast& ast) {
    bool ok = true;
    if (!doc.is_object()) {
      p_.add("", "a kernel AST is a JSON object", "an object with version, name, args and ops",
             describe(doc));
      return;
    }
    keys(doc, "", {"version", "name", "args", "ops", "regions"}, {"version", "name", "args", "ops"},
         "the kernel");
    if (doc.contains("version")) {
      int64_t v = 0;
      if (!as_int(doc["version"], v) || v != kVersion)
        p_.add("/version", fmt::format("this build reads format version {}", kVersion),
               std::to_string(kVersion), describe(doc["version"]));
    }
    if (doc.contains("name")) name(doc["name"], "/name", ast.name, kMaxKernelName);
    if (doc.contains("args")) {
      const auto& a = doc["args"];
      if (!a.is_array() || a.size() > static_cast<size_t>(kMaxArgs)) {
        p_.add("/args", "not a list of arguments", fmt::format("an array of at most {} arguments", kMaxArgs),
               describe(a));
      } else {
        ast.args.resize(a.size());
        for (size_t i = 0; i < a.size(); ++i) arg(a[i], child("/args", i), ast.args[i], ok);
      }
    }
    if (doc.contains("ops")) op_list(doc["ops"], "/ops", ast.ops, ok, 1);
    if (doc.contains("regions")) {
      const auto& r = doc["regions"];
      if (!r.is_array() || r.size() > static_cast<size_t>(kMaxRegions)) {
        p_.add("/regions", "not a list of regions",
               fmt::format("an array of at most {} regions", kMaxRegions), describe(r));
        return;
      }
      ast.regions.resize(r.size());
      for (size_t i = 0; i < r.size() && !p_.full(); ++i) {
        const std::string ptr = child("/regions", i);
        Region& reg = ast.regions[i];
        reg.pointer = ptr;
        if (!r[i].is_object()) {
          p_.add(ptr, "a region must be an object", "an object with name, ops and yield", describe(r[i]));
          continue;
        }
        keys(r[i], ptr, {"name", "ops", "yield"}, {"name", "ops"}, "a region");
        if (r[i].contains("name")) name(r[i]["name"], child(ptr, "name"), reg.name);
        if (r[i].contains("ops")) op_list(r[i]["ops"], child(ptr, "ops"), reg.ops, ok, 0);
        if (r[i].contains("yield")) names(r[i]["yield"], child(ptr, "yield"), reg.yields, kMaxCarried);
      }
    }
  }

 private:
  Problems& p_;
};

}  // namespace

void read_structure(const nlohmann::json& doc, Ast& ast, Problems& p) { Reader(p).root(doc, ast); }

}  // namespace tilescope::gen::detail
