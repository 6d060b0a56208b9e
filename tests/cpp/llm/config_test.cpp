// Layered LLM settings (include/tilescope/llm/config.h): order, sources, errors, and the trust rules.
#include "tilescope/llm/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tilescope::llm {
namespace {

namespace fs = std::filesystem;
using Kind = LlmError::Kind;

struct Dirs {
  fs::path root;
  fs::path user, project;
  Dirs() {
    root = fs::temp_directory_path() / ("tilescope-llm-config-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    user = root / "user";
    project = root / "repo";
    fs::create_directories(user);
    fs::create_directories(project / ".tilescope");
    fs::create_directories(project / "src" / "kernels");
  }
  ~Dirs() { fs::remove_all(root); }
  void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  Layers layers() const {
    Layers l;
    l.user_dir = user.string();
    l.project_dir = (project / "src" / "kernels").string();  // the search walks up to repo/.tilescope
    return l;
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, Kind::bad_request);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(LlmConfig, DefaultsWithNothingSet) {
  Dirs d;
  Config c = resolve(d.layers());
  EXPECT_EQ(c.endpoint.base_url, "http://127.0.0.1:8080/v1");
  EXPECT_EQ(c.endpoint.model, "");
  EXPECT_EQ(c.endpoint.api_key, "");
  EXPECT_EQ(c.sources["base_url"], "default");
  EXPECT_EQ(c.sources.count("model"), 0u);
}

TEST(LlmConfig, EachLayerOverridesTheOneBelowSettingBySetting) {
  Dirs d;
  d.write(d.user / "llm.toml",
          "base_url = \"http://user:1/v1\"\nmodel = \"user-model\"\napi_key = \"sk-user\"\ntimeout_s = 30\n"
          "[headers]\nX-Team = \"kernels\"\n");
  d.write(d.project / ".tilescope" / "llm.toml", "model = \"project-model\"\nmax_retries = 1\n");
  Layers l = d.layers();
  l.env = {{"TILESCOPE_LLM_MODEL", "env-model"}, {"OPENAI_API_KEY", "sk-openai"}};
  l.flags = {{"timeout_s", 5}};
  Config c = resolve(l);
  EXPECT_EQ(c.endpoint.base_url, "http://user:1/v1");
  EXPECT_EQ(c.endpoint.model, "env-model");
  EXPECT_EQ(c.endpoint.api_key, "sk-openai");
  EXPECT_EQ(c.endpoint.timeout_s, 5);
  EXPECT_EQ(c.endpoint.max_retries, 1);
  EXPECT_EQ(c.endpoint.headers.at("X-Team"), "kernels");
  EXPECT_EQ(c.sources["base_url"], "user file " + (d.user / "llm.toml").string());
  EXPECT_EQ(c.sources["max_retries"], "project file " + (d.project / ".tilescope" / "llm.toml").string());
  EXPECT_EQ(c.sources["model"], "environment TILESCOPE_LLM_MODEL");
  EXPECT_EQ(c.sources["api_key"], "environment OPENAI_API_KEY");
  EXPECT_EQ(c.sources["timeout_s"], "command line");
  // Python's setup_llm, then the web UI's session settings, on top.
  apply(c, Layer::python, {{"model", "py-model"}}, "tilescope.setup_llm()");
  apply(c, Layer::web, {{"model", "web-model"}, {"api_key", "sk-web"}}, "web settings");
  EXPECT_EQ(c.endpoint.model, "web-model");
  EXPECT_EQ(c.endpoint.api_key, "sk-web");
  EXPECT_EQ(c.sources["model"], "web settings");
}

TEST(LlmConfig, TilescopeVariablesWinOverOpenAIOnes) {
  Dirs d;
  Layers l = d.layers();
  l.env = {
      {"TILESCOPE_LLM_API_KEY", "sk-t"}, {"OPENAI_API_KEY", "sk-o"}, {"OPENAI_BASE_URL", "http://o:1/v1"}};
  Config c = resolve(l);
  EXPECT_EQ(c.endpoint.api_key, "sk-t");
  EXPECT_EQ(c.endpoint.base_url, "http://o:1/v1");
  EXPECT_EQ(c.sources["base_url"], "environment OPENAI_BASE_URL");
}

TEST(LlmConfig, JsonFilesToo) {
  Dirs d;
  d.write(d.user / "llm.json", R"({"model": "m", "max_retries": 0})");
  Config c = resolve(d.layers());
  EXPECT_EQ(c.endpoint.model, "m");
  EXPECT_EQ(c.endpoint.max_retries, 0);
}

TEST(LlmConfig, BadFilesAndSettingsAreLocatedErrors) {
  Dirs d;
  const std::string user = (d.user / "llm.toml").string();
  d.write(user, "model = \"m\"\nbase_url = \n");
  std::string e = error_of([&] { resolve(d.layers()); });
  EXPECT_NE(e.find(user + ":2:"), std::string::npos) << e;
  d.write(user, "modle = \"m\"\n");
  e = error_of([&] { resolve(d.layers()); });
  EXPECT_NE(e.find("unknown LLM setting 'modle'"), std::string::npos) << e;
  EXPECT_NE(e.find("model"), std::string::npos) << e;
  d.write(user, "timeout_s = \"soon\"\n");
  e = error_of([&] { resolve(d.layers()); });
  EXPECT_NE(e.find("'timeout_s' must be a positive number"), std::string::npos) << e;
  d.write(user, "max_retries = -1\n");
  EXPECT_NE(error_of([&] { resolve(d.layers()); }).find("max_retries"), std::string::npos);
  d.write(user, "[headers]\nX = 3\n");
  EXPECT_NE(error_of([&] { resolve(d.layers()); }).find("table of strings"), std::string::npos);
  fs::remove(user);
  d.write(d.user / "llm.json", "{\"model\": ");
  EXPECT_NE(error_of([&] { resolve(d.layers()); }).find("not valid JSON"), std::string::npos);
}

TEST(LlmConfig, AProjectFileMayNotHoldAKeyOrPlaceTheLog) {
  Dirs d;
  const std::string project = (d.project / ".tilescope" / "llm.toml").string();
  d.write(project, "api_key = \"sk-committed\"\n");
  std::string e = error_of([&] { resolve(d.layers()); });
  EXPECT_NE(e.find(project), std::string::npos) << e;
  EXPECT_NE(e.find("may not set 'api_key'"), std::string::npos) << e;
  EXPECT_EQ(e.find("sk-committed"), std::string::npos) << e;
  d.write(project, "debug_log = \"/home/u/.bashrc\"\n");
  EXPECT_NE(error_of([&] { resolve(d.layers()); }).find("may not set 'debug_log'"), std::string::npos);
}

TEST(LlmConfig, TheKeyIsNotSentWhereOnlyAProjectFileChoseTheServer) {
  Dirs d;
  d.write(d.project / ".tilescope" / "llm.toml", "base_url = \"http://attacker.example/v1\"\n");
  Layers l = d.layers();
  l.env = {{"OPENAI_API_KEY", "sk-mine"}};
  Config c = resolve(l);
  EXPECT_EQ(c.endpoint.base_url, "http://attacker.example/v1");
  EXPECT_EQ(c.endpoint.api_key, "");
  EXPECT_TRUE(c.key_withheld);
  EXPECT_NE(describe_text(c).find("not sent"), std::string::npos);
  // Chosen again by a layer the user controls: the key goes.
  l.env["TILESCOPE_LLM_BASE_URL"] = "http://attacker.example/v1";
  Config trusted = resolve(l);
  EXPECT_EQ(trusted.endpoint.api_key, "sk-mine");
  EXPECT_FALSE(trusted.key_withheld);
}

TEST(LlmConfig, TheKeyIsNotSentWhereOnlyTheWebPageChoseTheServer) {
  Dirs d;
  Layers l = d.layers();
  l.env = {{"TILESCOPE_LLM_API_KEY", "sk-mine"}};
  Config c = resolve(l);
  EXPECT_EQ(c.endpoint.api_key, "sk-mine");
  Config web = c;
  apply(web, Layer::web, {{"base_url", "http://elsewhere.example/v1"}}, "web settings");
  EXPECT_EQ(web.endpoint.base_url, "http://elsewhere.example/v1");
  EXPECT_EQ(web.endpoint.api_key, "");
  EXPECT_TRUE(web.key_withheld);
  // With a key of the page's own, that key goes there; a model alone changes nothing about the key.
  Config both = c;
  apply(both, Layer::web, {{"base_url", "http://elsewhere.example/v1"}, {"api_key", "sk-page"}},
        "web settings");
  EXPECT_EQ(both.endpoint.api_key, "sk-page");
  EXPECT_FALSE(both.key_withheld);
  Config model = c;
  apply(model, Layer::web, {{"model", "m"}}, "web settings");
  EXPECT_EQ(model.endpoint.api_key, "sk-mine");
  EXPECT_FALSE(model.key_withheld);
}

TEST(LlmConfig, TheWebMayNotPlaceTheDebugLog) {
  Dirs d;
  Config c = resolve(d.layers());
  EXPECT_NE(error_of([&] {
              apply(c, Layer::web, {{"debug_log", "/tmp/x"}}, "web settings");
            }).find("never over HTTP"),
            std::string::npos);
  EXPECT_EQ(c.endpoint.debug_log, "");
}

TEST(LlmConfig, DescribeNeverShowsTheKeyOrHeaderValues) {
  Dirs d;
  Layers l = d.layers();
  l.env = {{"TILESCOPE_LLM_API_KEY", "sk-very-secret"}};
  l.flags = {{"headers", {{"api-key", "azure-secret"}}}};
  Config c = resolve(l);
  const std::string text = describe_text(c) + describe(c).dump();
  EXPECT_EQ(text.find("sk-very-secret"), std::string::npos) << text;
  EXPECT_EQ(text.find("azure-secret"), std::string::npos) << text;
  EXPECT_NE(text.find("api-key"), std::string::npos) << text;
  EXPECT_EQ(describe(c)["settings"]["api_key"]["value"], "set");
  EXPECT_EQ(describe(c)["settings"]["api_key"]["source"], "environment TILESCOPE_LLM_API_KEY");
}

}  // namespace
}  // namespace tilescope::llm
