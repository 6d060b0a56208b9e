// The JSON Schema of the kernel AST and the op reference, both generated from the op table (table.h).
//
// Written for grammar engines (llama.cpp's json_schema, XGrammar, Outlines) as much as for validators:
// the only $refs point into $defs and no definition refers to itself or to one that refers back (the op
// union does not contain regions: a for / if names its region), every string has a maxLength and every
// array a maxItems, and op names and dtypes are enums. The op union is anyOf (each branch fixes "op" with
// const, so at most one branch can match; OpenAI's structured outputs accept anyOf, not oneOf). A name's
// bound is in its pattern too: llama.cpp's converter ignores maxLength on a string with a pattern (a
// 135M model then wrote one name for 1,500 tokens). Keys are in the order a model should write them (a
// grammar engine keeps the schema's order): version, name, args, ops, regions; in an op "op" first, then
// its result, operands and fields.
#include <fmt/format.h>

#include <algorithm>

#include "table.h"

namespace tilescope::gen {
namespace {

using json = nlohmann::ordered_json;

json ref(const char* def) { return {{"$ref", std::string("#/$defs/") + def}}; }

json dim_schema(int64_t lo, int64_t hi) {
  return {{"anyOf", json::array({{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}, ref("name")})}};
}

json field_schema(const FieldSpec& f) {
  json s;
  switch (f.type) {
    case FieldType::integer: s = {{"type", "integer"}, {"minimum", f.min}, {"maximum", f.max}}; break;
    case FieldType::dtype: s = ref("dtype"); break;
    case FieldType::literal: s = ref("literal"); break;
    case FieldType::shape:
      s = {{"type", "array"}, {"minItems", 1}, {"maxItems", kMaxDims}, {"items", dim_schema(f.min, f.max)}};
      break;
    case FieldType::dim: s = dim_schema(f.min, f.max); break;
    case FieldType::int_list:
      s = {{"type", "array"},
           {"minItems", 2},
           {"maxItems", kMaxDims},
           {"items", {{"type", "integer"}, {"minimum", f.min}, {"maximum", f.max}}}};
      break;
    case FieldType::choice: s = {{"enum", f.choices}}; break;
    case FieldType::boolean: s = {{"type", "boolean"}}; break;
    case FieldType::name:
    case FieldType::region: s = ref("name"); break;
    case FieldType::name_list:
      s = {{"type", "array"}, {"maxItems", kMaxCarried}, {"items", ref("name")}};
      break;
    case FieldType::bound:
      s = {{"anyOf",
            json::array({ref("name"), {{"type", "integer"}, {"minimum", f.min}, {"maximum", f.max}}})}};
      break;
  }
  if (*f.doc) s["description"] = f.doc;
  return s;
}

json op_schema(const OpSpec& s) {
  json props = json::object();
  json required = json::array({"op"});
  props["op"] = {{"const", s.name}};
  if (s.results == Results::many) {
    props["results"] = {{"type", "array"}, {"maxItems", kMaxCarried}, {"items", ref("name")}};
  } else if (s.results != Results::none) {
    props["result"] = ref("name");
    if (s.results == Results::one) required.push_back("result");
  }
  if (!s.roles.empty()) {
    std::string roles;
    for (size_t i = 0; i < s.roles.size(); ++i)
      roles += fmt::format("{}{}", i ? ", " : "",
                           std::string(s.roles[i]) + (static_cast<int>(i) >= s.min_operands ? "?" : ""));
    props["operands"] = {{"type", "array"},
                         {"minItems", s.min_operands},
                         {"maxItems", s.roles.size()},
                         {"items", ref("name")},
                         {"description", roles}};
    required.push_back("operands");
  }
  for (const auto& f : s.fields) {
    props[f.key] = field_schema(f);
    if (f.required) required.push_back(f.key);
  }
  return {{"type", "object"},
          {"description", s.doc},
          {"properties", props},
          {"required", required},
          {"additionalProperties", false}};
}

json arg_schema(const char* kind, const char* third, json third_schema) {
  return {
      {"type", "object"},
      {"properties", {{"name", ref("name")}, {"kind", {{"const", kind}}}, {third, std::move(third_schema)}}},
      {"required", {"name", "kind", third}},
      {"additionalProperties", false}};
}

// "^[A-Za-z_][A-Za-z0-9_]{0,N-1}$": an identifier of at most N characters (table.h, is_name).
std::string bounded_name_pattern(int max_length) {
  return fmt::format("^[A-Za-z_][A-Za-z0-9_]{{0,{}}}$", max_length - 1);
}

json name_schema(int max_length) {
  return {{"type", "string"},
          {"pattern", bounded_name_pattern(max_length)},
          {"minLength", 1},
          {"maxLength", max_length}};
}

// The schema of schema() (iface null, the format's bounds) or of schema(iface, bounds).
json build(const Interface* iface, const Bounds& b) {
  json dtypes = json::array(), pointees = json::array();
  for (int i = 0; i < kNumDtypes; ++i) {
    dtypes.push_back(dtype_name(static_cast<Dtype>(i)));
    if (static_cast<Dtype>(i) != Dtype::i1) pointees.push_back(dtype_name(static_cast<Dtype>(i)));
  }
  json ops = json::array();
  for (const auto& s : op_table()) ops.push_back(op_schema(s));
  json defs = {
      {"name", name_schema(b.name_length)},
      {"dtype", {{"enum", dtypes}}},
      {"pointee", {{"enum", pointees}, {"description", "i1 data is stored as i8"}}},
      {"literal", {{"anyOf", json::array({{{"type", "number"}}, {{"enum", {"inf", "-inf", "nan"}}}})}}},
      {"op", {{"anyOf", ops}}},
      {"region",
       {{"type", "object"},
        {"description", "the body of a for, or a branch of an if: ops, then the values it yields"},
        {"properties",
         {{"name", ref("name")},
          {"ops", {{"type", "array"}, {"maxItems", b.region_ops}, {"items", ref("op")}}},
          {"yield", {{"type", "array"}, {"maxItems", kMaxCarried}, {"items", ref("name")}}}}},
        {"required", {"name", "ops"}},
        {"additionalProperties", false}}},
  };
  json name, args;
  if (iface) {
    // The task's interface, fixed: every argument's name, kind and dtype is a const; a constexpr's value
    // (a block size) is the model's choice among powers of two.
    json items = json::array();
    for (const Arg& a : iface->args) {
      json third;
      const char* key = a.kind == Arg::Kind::constexpr_ ? "value" : "dtype";
      if (a.kind == Arg::Kind::constexpr_) {
        json powers = json::array();
        for (int64_t v = 1; v <= kMaxConstexprChoice; v *= 2) powers.push_back(v);
        third = {{"enum", powers}};
      } else {
        third = {{"const", dtype_name(a.dtype)}};
      }
      const char* kind = a.kind == Arg::Kind::pointer  ? "pointer"
                         : a.kind == Arg::Kind::scalar ? "scalar"
                                                       : "constexpr";
      items.push_back(
          {{"type", "object"},
           {"properties", {{"name", {{"const", a.name}}}, {"kind", {{"const", kind}}}, {key, third}}},
           {"required", {"name", "kind", key}},
           {"additionalProperties", false}});
    }
    name = {{"const", iface->name}};
    args = {
        {"type", "array"}, {"prefixItems", items}, {"minItems", items.size()}, {"maxItems", items.size()}};
  } else {
    defs["arg"] = {
        {"anyOf",
         json::array({arg_schema("pointer", "dtype", ref("pointee")),
                      arg_schema("scalar", "dtype", ref("dtype")),
                      arg_schema("constexpr", "value",
                                 {{"type", "integer"}, {"minimum", INT32_MIN}, {"maximum", INT32_MAX}})})}};
    name = name_schema(kMaxKernelName);
    args = {{"type", "array"}, {"maxItems", kMaxArgs}, {"items", ref("arg")}};
  }
  return {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", fmt::format("urn:tilescope:gen:kernel-ast:{}", kVersion)},
      {"title", fmt::format("tilescope kernel AST, version {}", kVersion)},
      {"description",
       "One Triton kernel at the level of TTIR: arguments, then ops in order, each defining SSA names; for / "
       "if bodies are entries of regions, named by the op (docs/gen-format.md)."},
      {"type", "object"},
      {"properties",
       {{"version", {{"const", kVersion}}},
        {"name", name},
        {"args", args},
        {"ops", {{"type", "array"}, {"minItems", 1}, {"maxItems", b.ops}, {"items", ref("op")}}},
        {"regions", {{"type", "array"}, {"maxItems", b.regions}, {"items", ref("region")}}}}},
      {"required", {"version", "name", "args", "ops"}},
      {"additionalProperties", false},
      {"$defs", defs},
  };
}

}  // namespace

nlohmann::ordered_json schema() { return build(nullptr, Bounds{}); }

nlohmann::ordered_json schema(const Interface& iface, const Bounds& bounds) {
  auto clamp = [](int v, int hi) { return std::clamp(v, 1, hi); };
  Bounds b{clamp(bounds.ops, kMaxOps), std::clamp(bounds.regions, 0, kMaxRegions),
           clamp(bounds.region_ops, kMaxOps), clamp(bounds.name_length, kMaxNameLength)};
  return build(&iface, b);
}

std::string op_reference() {
  std::string out;
  for (const auto& s : op_table()) {
    std::string line = s.name;
    if (!s.roles.empty()) {
      line += "(";
      for (size_t i = 0; i < s.roles.size(); ++i)
        line += fmt::format("{}{}", i ? ", " : "",
                            std::string(s.roles[i]) + (static_cast<int>(i) >= s.min_operands ? "?" : ""));
      line += ")";
    }
    line += s.results == Results::many ? " -> results" : s.results == Results::none ? "" : " -> result";
    line += ": " + std::string(s.doc);
    // The TTIR of the elementwise ops, by element type.
    if (*s.int_op || *s.float_op) {
      auto ttir = [](const char* op, const char* pred) {
        return *pred ? fmt::format("{} {}", op, pred) : std::string(op);
      };
      std::string t;
      if (*s.int_op) t = "integers " + ttir(s.int_op, s.int_pred);
      if (*s.float_op) t += fmt::format("{}floats {}", t.empty() ? "" : ", ", ttir(s.float_op, s.float_pred));
      line += " [" + t + "]";
    }
    out += line + "\n";
    for (const auto& f : s.fields) {
      std::string t;
      switch (f.type) {
        case FieldType::integer: t = fmt::format("integer {}..{}", f.min, f.max); break;
        case FieldType::dtype: t = "dtype"; break;
        case FieldType::literal: t = "number | inf | -inf | nan"; break;
        case FieldType::shape: t = "[dim, ...]"; break;
        case FieldType::dim: t = "integer | constexpr name"; break;
        case FieldType::int_list: t = "[integer, ...]"; break;
        case FieldType::choice:
          for (const char* c : f.choices) t += fmt::format("{}{}", t.empty() ? "" : " | ", std::string(c));
          break;
        case FieldType::boolean: t = "true | false"; break;
        case FieldType::name: t = "name"; break;
        case FieldType::name_list: t = "[name, ...]"; break;
        case FieldType::bound: t = "name | integer"; break;
        case FieldType::region: t = "region name"; break;
      }
      out += fmt::format("    {}{}: {}; {}\n", f.key, f.required ? "" : "?", t, f.doc);
    }
  }
  return out;
}

}  // namespace tilescope::gen
