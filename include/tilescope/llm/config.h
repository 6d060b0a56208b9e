// tilescope/llm: where the LLM settings come from (README, "LLM settings").
//
// Layers, lowest to highest; a higher layer's value replaces a lower one's, setting by setting:
//   1. built-in defaults: base_url http://127.0.0.1:8080/v1 (llama.cpp's server), the model the server
//      lists first, no key;
//   2. the user file: $XDG_CONFIG_HOME/tilescope/llm.toml (else ~/.config/tilescope/llm.toml), or
//      llm.json beside it;
//   3. the project file: .tilescope/llm.toml (or .json) in the working directory or its nearest parent
//      that has one;
//   4. the environment: TILESCOPE_LLM_BASE_URL, TILESCOPE_LLM_MODEL, TILESCOPE_LLM_API_KEY,
//      TILESCOPE_LLM_DEBUG_LOG; OPENAI_BASE_URL and OPENAI_API_KEY when the TILESCOPE_ ones are unset;
//   5. command-line flags; 6. Python's tilescope.setup_llm(...); 7. the web UI's settings (session only).
// Settings: base_url, model, api_key, headers (a table of strings), timeout_s, connect_timeout_s,
// max_retries, debug_log, max_tokens (the longest answer the assistant asks for; default 1024).
//
// Trust: a project file comes with the code being debugged, which may be someone else's. It may not
// hold api_key or debug_log (an error naming the file), and the key is not sent to a base_url that
// only a project file chose (the effective config says so: Config::key_withheld). The web layer may
// not set debug_log (no file path comes from the network), and when it sets base_url without a key
// of its own, the key of the lower layers is withheld too.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tilescope/llm/client.h"

namespace tilescope::llm {

enum class Layer { defaults, user_file, project_file, environment, flags, python, web };

struct Config {
  Endpoint endpoint;
  /// Per setting that is set: where its value came from ("default", "user file /home/u/...",
  /// "environment TILESCOPE_LLM_MODEL", "command line", ...).
  std::map<std::string, std::string> sources;
  /// The key is set but not sent: base_url came from a project file only, or from the web layer without
  /// a key of its own (endpoint.api_key is empty).
  bool key_withheld = false;

  /// The layers applied so far, lowest first (apply() resolves them again with one more).
  struct Applied {
    Layer layer;
    std::string source;
    nlohmann::json settings;
  };
  std::vector<Applied> applied;
};

/// What each layer holds; a layer left empty contributes nothing.
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct Layers {
  std::string user_dir;  // the user file's folder; empty: $XDG_CONFIG_HOME/tilescope or ~/.config/tilescope
  std::string project_dir;  // where the project-file search starts; empty: the working directory
  std::map<std::string, std::string> env;  // the environment variables above (the caller reads them)
  nlohmann::json flags;                    // settings as a JSON object
  nlohmann::json python;
  nlohmann::json web;
};

/// The environment variables of layer 4, read from the process environment.
std::map<std::string, std::string> environment();

/// Resolve the layers. Throws LlmError (bad_request) naming the file or layer and the setting for an
/// unknown setting, a value of the wrong type, a file that does not parse (with its line and column),
/// or a setting a layer may not hold.
Config resolve(const Layers& layers);

/// Apply one more layer's settings (a JSON object) onto `config`: how setup_llm and the web UI
/// change the session's settings. Same errors as resolve.
void apply(Config& config, Layer layer, const nlohmann::json& settings, const std::string& source);

/// The effective settings for people: each setting's value (the key only as "set" / "not set"),
/// and where it came from. JSON: {"settings": {name: {"value", "source"}}, "key_withheld": bool}.
nlohmann::json describe(const Config& config);
std::string describe_text(const Config& config);

}  // namespace tilescope::llm
