// Layered LLM settings (config.h).
#include "tilescope/llm/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tilescope::llm {

namespace fs = std::filesystem;
using Kind = LlmError::Kind;

namespace {

enum class Type { string, number, integer, count, table };

struct SettingDef {
  std::string_view name;
  Type type;
  std::string_view help;
};

// The one table of settings.
constexpr SettingDef kSettings[] = {
    {"base_url", Type::string, "the server's OpenAI-compatible base URL (usually ending in /v1)"},
    {"model", Type::string, "the model id; unset: the first model the server lists"},
    {"api_key", Type::string, "sent as `Authorization: Bearer`; never shown"},
    {"headers", Type::table, "extra request headers"},
    {"timeout_s", Type::number, "seconds a response (or the gap between streamed bytes) may take"},
    {"connect_timeout_s", Type::number, "seconds to open a connection"},
    {"max_retries", Type::integer, "retries on 429, 5xx and refused connections"},
    {"debug_log", Type::string, "a JSONL file of requests and responses (the key redacted)"},
    {"max_tokens", Type::count, "the longest answer the assistant asks for, in tokens"},
};

const SettingDef* find_setting(std::string_view name) {
  for (const SettingDef& d : kSettings)
    if (d.name == name) return &d;
  return nullptr;
}

std::string known_names() {
  std::string s;
  for (const SettingDef& d : kSettings) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

LlmError bad(const std::string& message) { return LlmError(Kind::bad_request, 0, message); }

void check(const nlohmann::json& settings, Layer layer, const std::string& source) {
  if (settings.is_null()) return;
  if (!settings.is_object())
    throw bad(fmt::format("{}: the LLM settings must be a table of name = value", source));
  for (const auto& [k, v] : settings.items()) {
    const SettingDef* d = find_setting(k);
    if (!d) throw bad(fmt::format("{}: unknown LLM setting '{}' (known: {})", source, k, known_names()));
    bool ok = false;
    switch (d->type) {
      case Type::string: ok = v.is_string(); break;
      case Type::number: ok = v.is_number() && v.get<double>() > 0; break;
      case Type::integer:
        ok = v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 100;
        break;
      case Type::count:
        ok = v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= (int64_t{1} << 20);
        break;
      case Type::table:
        ok = v.is_object();
        for (const auto& [hk, hv] : v.items()) ok = ok && hv.is_string() && !hk.empty();
        break;
    }
    if (!ok) {
      const char* want = d->type == Type::string    ? "a string"
                         : d->type == Type::number  ? "a positive number"
                         : d->type == Type::integer ? "an integer from 0 to 100"
                         : d->type == Type::count   ? "an integer from 1 to 1048576"
                                                    : "a table of strings";
      throw bad(fmt::format("{}: the LLM setting '{}' must be {}", source, k, want));
    }
    if (layer == Layer::project_file && (k == "api_key" || k == "debug_log"))
      throw bad(fmt::format(
          "{}: a project file may not set '{}' (it travels with the code, which may not be yours); "
          "set it in your user file ~/.config/tilescope/llm.toml or the environment",
          source, k));
    if (layer == Layer::web && k == "debug_log")
      throw bad(
          fmt::format("{}: the debug log is placed only by local configuration, never over HTTP", source));
  }
}

nlohmann::json from_toml(const toml::node& n) {
  if (auto t = n.as_table()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, v] : *t) o[std::string(k.str())] = from_toml(v);
    return o;
  }
  if (auto a = n.as_array()) {
    nlohmann::json o = nlohmann::json::array();
    for (const auto& v : *a) o.push_back(from_toml(v));
    return o;
  }
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return i->get();
  if (auto f = n.as_floating_point()) return f->get();
  if (auto b = n.as_boolean()) return b->get();
  return nullptr;  // dates and times: no setting takes one; check() rejects it with the setting's name
}

/// A settings file as JSON (TOML by extension .toml, else JSON). Errors name the file and position.
nlohmann::json read_file(const fs::path& path) {
  std::ifstream f(path);
  if (!f) throw bad(fmt::format("{}: cannot be read", path.string()));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  if (path.extension() == ".toml") {
    try {
      return from_toml(toml::parse(text, path.string()));
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      throw bad(fmt::format("{}:{}:{}: {}", path.string(), b.line, b.column, e.description()));
    }
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw bad(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
}

/// The settings file in `dir` (llm.toml, else llm.json), or "".
fs::path file_in(const fs::path& dir) {
  for (const char* name : {"llm.toml", "llm.json"}) {
    std::error_code ec;
    if (fs::is_regular_file(dir / name, ec)) return dir / name;
  }
  return {};
}

fs::path user_dir(const Layers& l) {
  if (!l.user_dir.empty()) return l.user_dir;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return fs::path(x) / "tilescope";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".config" / "tilescope";
  return {};
}

fs::path project_file(const Layers& l) {
  std::error_code ec;
  fs::path dir = l.project_dir.empty() ? fs::current_path(ec) : fs::path(l.project_dir);
  dir = fs::absolute(dir, ec);
  for (; !dir.empty(); dir = dir.parent_path()) {
    if (fs::path f = file_in(dir / ".tilescope"); !f.empty()) return f;
    if (dir == dir.parent_path()) break;
  }
  return {};
}

void resolve_into(Config& c) {
  Endpoint e;
  c.sources = {{"base_url", "default"},
               {"timeout_s", "default"},
               {"connect_timeout_s", "default"},
               {"max_retries", "default"},
               {"max_tokens", "default"}};
  std::map<std::string, Layer> layer_of;
  for (const Config::Applied& a : c.applied) {
    if (!a.settings.is_object()) continue;
    for (const auto& [k, v] : a.settings.items()) {
      if (k == "base_url") e.base_url = v.get<std::string>();
      if (k == "model") e.model = v.get<std::string>();
      if (k == "api_key") e.api_key = v.get<std::string>();
      if (k == "headers")
        for (const auto& [hk, hv] : v.items()) e.headers[hk] = hv.get<std::string>();
      if (k == "timeout_s") e.timeout_s = v.get<double>();
      if (k == "connect_timeout_s") e.connect_timeout_s = v.get<double>();
      if (k == "max_retries") e.max_retries = v.get<int>();
      if (k == "debug_log") e.debug_log = v.get<std::string>();
      if (k == "max_tokens") e.max_tokens = v.get<int>();
      c.sources[k] = a.source;
      layer_of[k] = a.layer;
    }
  }
  c.key_withheld = false;
  // The key is not sent to a base_url that only a project file chose, nor to one the web page chose
  // without giving a key of its own (a page holding the token could otherwise send the user's key to a
  // server of its choice).
  const bool project_url = layer_of.count("base_url") && layer_of["base_url"] == Layer::project_file;
  const bool web_url = layer_of.count("base_url") && layer_of["base_url"] == Layer::web &&
                       !(layer_of.count("api_key") && layer_of["api_key"] == Layer::web);
  if (!e.api_key.empty() && (project_url || web_url)) {
    e.api_key.clear();
    c.key_withheld = true;
  }
  c.endpoint = std::move(e);
}

}  // namespace

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (const char* name : {"TILESCOPE_LLM_BASE_URL", "TILESCOPE_LLM_MODEL", "TILESCOPE_LLM_API_KEY",
                           "TILESCOPE_LLM_DEBUG_LOG", "OPENAI_BASE_URL", "OPENAI_API_KEY"})
    if (const char* v = std::getenv(name); v && *v) env[name] = v;
  return env;
}

void apply(Config& config, Layer layer, const nlohmann::json& settings, const std::string& source) {
  check(settings, layer, source);
  if (settings.is_null() || settings.empty()) return;
  config.applied.push_back({layer, source, settings});
  resolve_into(config);
}

Config resolve(const Layers& l) {
  Config c;
  resolve_into(c);
  if (fs::path d = user_dir(l); !d.empty())
    if (fs::path f = file_in(d); !f.empty())
      apply(c, Layer::user_file, read_file(f), "user file " + f.string());
  if (fs::path f = project_file(l); !f.empty())
    apply(c, Layer::project_file, read_file(f), "project file " + f.string());
  // The environment: each variable is its own source.
  auto env = [&](const char* name, const char* fallback, const char* setting) {
    auto it = l.env.find(name);
    if (it == l.env.end() && fallback) it = l.env.find(fallback);
    if (it != l.env.end()) apply(c, Layer::environment, {{setting, it->second}}, "environment " + it->first);
  };
  env("TILESCOPE_LLM_BASE_URL", "OPENAI_BASE_URL", "base_url");
  env("TILESCOPE_LLM_MODEL", nullptr, "model");
  env("TILESCOPE_LLM_API_KEY", "OPENAI_API_KEY", "api_key");
  env("TILESCOPE_LLM_DEBUG_LOG", nullptr, "debug_log");
  apply(c, Layer::flags, l.flags, "command line");
  apply(c, Layer::python, l.python, "tilescope.setup_llm()");
  apply(c, Layer::web, l.web, "web settings");
  return c;
}

nlohmann::json describe(const Config& c) {
  const Endpoint& e = c.endpoint;
  auto src = [&](const std::string& k) {
    return c.sources.count(k) ? c.sources.at(k) : std::string("not set");
  };
  nlohmann::json s = nlohmann::json::object();
  s["base_url"] = {{"value", e.base_url}, {"source", src("base_url")}};
  s["model"] = {{"value", e.model.empty() ? "(the first model the server lists)" : e.model},
                {"source", src("model")}};
  const bool key_set = !e.api_key.empty() || c.key_withheld;
  s["api_key"] = {
      {"value", key_set ? (c.key_withheld ? "set, not sent (see key_withheld)" : "set") : "not set"},
      {"source", src("api_key")}};
  nlohmann::json h = nlohmann::json::array();
  for (const auto& [k, v] : e.headers) h.push_back(k);  // names only: a header may carry a secret too
  s["headers"] = {{"value", h}, {"source", src("headers")}};
  s["timeout_s"] = {{"value", e.timeout_s}, {"source", src("timeout_s")}};
  s["connect_timeout_s"] = {{"value", e.connect_timeout_s}, {"source", src("connect_timeout_s")}};
  s["max_retries"] = {{"value", e.max_retries}, {"source", src("max_retries")}};
  s["debug_log"] = {{"value", e.debug_log.empty() ? "off" : e.debug_log}, {"source", src("debug_log")}};
  s["max_tokens"] = {{"value", e.max_tokens}, {"source", src("max_tokens")}};
  nlohmann::json out = {{"settings", s}, {"key_withheld", c.key_withheld}};
  return out;
}

std::string describe_text(const Config& c) {
  const nlohmann::json d = describe(c);
  std::string out;
  for (const SettingDef& def : kSettings) {
    const auto& s = d["settings"][std::string(def.name)];
    const std::string value = s["value"].is_string() ? s["value"].get<std::string>() : s["value"].dump();
    out += fmt::format("{:<18} {:<44} ({})\n", def.name, value, s["source"].get<std::string>());
  }
  if (c.key_withheld)
    out += fmt::format(
        "\nThe API key is not sent: base_url comes from the {}, which travels with the code. Set base_url in "
        "your "
        "user file or the environment to send the key there.\n",
        c.sources.at("base_url"));
  return out;
}

}  // namespace tilescope::llm
