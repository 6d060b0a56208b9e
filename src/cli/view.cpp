#include "view.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "assist_web.h"
#include "paths.h"
#include "tilescope/ir/diag.h"
#include "tilescope/server/server.h"
#include "tilescope/trace/query.h"

namespace tilescope::cli {

namespace fs = std::filesystem;
using server::ApiError;
using server::Request;
using server::Response;
using json = nlohmann::json;

namespace {

/// The front end's built files: $TILESCOPE_WEB_DIR, else <bin>/../web/dist (a build tree beside the
/// sources, whose web/ holds the unbuilt index.html), else <bin>/../web (the installed package). Read once at
/// start into memory: no request ever names a file.
std::map<std::string, server::Asset> load_assets() {
  const fs::path web = beside_executable("web", "TILESCOPE_WEB_DIR");
  const std::vector<fs::path> candidates = {web / "dist", web};
  std::error_code ec;
  // Types cpp-httplib does not compress on the fly (server.h, kJson): scripts and styles are sent as
  // they are, fast over loopback; only the small HTML page is compressed.
  static const std::map<std::string, std::string> types = {{".html", "text/html; charset=utf-8"},
                                                           {".js", "application/javascript; charset=utf-8"},
                                                           {".css", "text/css; charset=utf-8"},
                                                           {".svg", "image/svg+xml"},
                                                           {".png", "image/png"},
                                                           {".json", server::kJson},
                                                           {".woff2", "font/woff2"},
                                                           {".ico", "image/x-icon"}};
  for (const fs::path& dir : candidates) {
    if (!fs::is_regular_file(dir / "index.html", ec)) continue;
    std::map<std::string, server::Asset> assets;
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
      if (!e.is_regular_file()) continue;
      auto t = types.find(e.path().extension().string());
      if (t == types.end()) continue;
      std::ifstream f(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      assets["/" + fs::relative(e.path(), dir).generic_string()] = {t->second, ss.str()};
    }
    return assets;
  }
  throw Error(
      "the web visualizer's files are missing (no index.html in $TILESCOPE_WEB_DIR, <bin>/../web/dist or "
      "<bin>/../web): rebuild tilescope with `make build`, which builds them");
}

constexpr int64_t kMax = int64_t{1} << 40;  // ids, indexes and offsets above are refused

int64_t id_of(const Request& r, const char* name) { return r.integer(name, 1, kMax); }

template <class F>
Response answer(F&& f) {
  try {
    return f();
  } catch (const trace::Query::NotFound& e) {
    throw ApiError(404, "not_found", e.what());
  }
}

std::vector<server::Route> routes(const trace::Query& q) {
  return {
      {"GET", "/api/session", [&q](const Request&) { return Response::json(q.session()); }},
      {"GET", "/api/launches", [&q](const Request&) { return Response::json(q.launches()); }},
      {"GET", "/api/launches/{launch}",
       [&q](const Request& r) {
         return answer([&] { return Response::json(q.launch(id_of(r, "launch"))); });
       }},
      {"GET", "/api/launches/{launch}/programs",
       [&q](const Request& r) {
         return answer([&] {
           return Response::json(
               q.programs(id_of(r, "launch"), r.text("bytes") == "1", r.text("time") == "1"));
         });
       }},
      {"GET", "/api/launches/{launch}/programs/{x}/{y}/{z}",
       [&q](const Request& r) {
         return answer([&] {
           return Response::json(
               q.program(id_of(r, "launch"),
                         {r.integer("x", 0, kMax), r.integer("y", 0, kMax), r.integer("z", 0, kMax)}));
         });
       }},
      {"GET", "/api/launches/{launch}/programs/{x}/{y}/{z}/values",
       [&q](const Request& r) {
         // ?sites=3,7: the op sites whose operands and results to compute (at most 16).
         std::vector<int> sites;
         const std::string list = r.text("sites");
         for (size_t i = 0; i < list.size();) {
           size_t j = list.find(',', i);
           if (j == std::string::npos) j = list.size();
           int v = -1;
           auto [p, ec] = std::from_chars(list.data() + i, list.data() + j, v);
           if (ec != std::errc() || p != list.data() + j || v < 0)
             throw ApiError(400, "bad_parameter", "sites is a comma-separated list of op site numbers");
           sites.push_back(v);
           i = j + 1;
         }
         if (sites.empty() || sites.size() > 16)
           throw ApiError(400, "bad_parameter", "give 1 to 16 op sites: ?sites=3,7");
         return answer([&] {
           try {
             return Response::json(q.values(
                 id_of(r, "launch"),
                 {r.integer("x", 0, kMax), r.integer("y", 0, kMax), r.integer("z", 0, kMax)}, sites));
           } catch (const Error& e) {
             throw ApiError(409, "not_replayable", e.what());
           }
         });
       }},
      {"GET", "/api/launches/{launch}/args/{arg}/counts",
       [&q](const Request& r) {
         return answer([&] {
           return Response::json(
               q.element_counts(id_of(r, "launch"), static_cast<int>(r.integer("arg", 0, 1 << 20))));
         });
       }},
      {"GET", "/api/launches/{launch}/args/{arg}/elements/{element}",
       [&q](const Request& r) {
         return answer([&] {
           return Response::json(q.element_accesses(
               id_of(r, "launch"), static_cast<int>(r.integer("arg", 0, 1 << 20)),
               r.integer("element", 0, kMax), static_cast<int>(r.integer("limit", 1, 4096, 256))));
         });
       }},
      {"GET", "/api/launches/{launch}/args/{arg}/contents/{phase}",
       [&q](const Request& r) {
         const std::string phase = r.text("phase");
         if (phase != "before" && phase != "after")
           throw ApiError(400, "bad_parameter", "the phase is 'before' or 'after'");
         return answer([&] {
           Response out;
           out.content_type = "application/octet-stream";
           out.body = q.contents(id_of(r, "launch"), static_cast<int>(r.integer("arg", 0, 1 << 20)), phase);
           return out;
         });
       }},
      {"GET", "/api/sources/{id}",
       [&q](const Request& r) { return answer([&] { return Response::json(q.source(id_of(r, "id"))); }); }},
      {"GET", "/api/kernels/{id}",
       [&q](const Request& r) { return answer([&] { return Response::json(q.kernel(id_of(r, "id"))); }); }},
  };
}

}  // namespace

CLI::App* add_view(CLI::App& app, ViewOptions& o) {
  auto* v = app.add_subcommand("view", "Open a trace in the web visualizer (served on 127.0.0.1)");
  v->add_option("trace", o.path, "the trace file (tilescope trace -o FILE -- ...)")->required();
  v->add_option("--host", o.host,
                "address to serve on; anything but a loopback address exposes the trace to the network "
                "(the token is still required)")
      ->capture_default_str();
  v->add_option("--port", o.port, "port (0: a free one)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            int n = -1;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
            if (ec != std::errc() || end != s.data() + s.size() || n < 0 || n > 65535)
              return fmt::format("'{}' is not a port number (0 to 65535; 0: a free one)", s);
            return "";
          },
          "PORT"))
      ->capture_default_str();
  add_llm_settings(*v, o.llm, /*json_flag=*/false);
  v->add_option("--budget", o.budget, "the assistant's context, in tokens per question")
      ->check(CLI::Range(int64_t{500}, int64_t{1} << 20))
      ->capture_default_str();
  return v;
}

int view_command(const ViewOptions& o) {
  trace::Query q(o.path);
  server::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  // The assistant's settings: every layer but the web page's, which the page adds for this session.
  llm::Config llm_settings;
  std::string llm_error;
  try {
    llm_settings = llm_config(o.llm);
  } catch (const llm::LlmError& e) {
    llm_error = e.what();
    std::cerr << fmt::format("tilescope: warning: the assistant is off until the page sets a base URL: {}\n",
                             llm_error);
  }
  WebAssistant assistant(q, llm_settings, llm_error, o.budget);
  std::vector<server::Route> all = routes(q);
  for (server::Route& r : assistant.routes()) all.push_back(std::move(r));
  server::Server srv(so, std::move(all), load_assets());
  // SIGINT and SIGTERM are taken by this thread (sigwait), blocked in every other: the server's threads
  // inherit the mask from here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a page that goes away mid-stream is a failed write, not the end
  srv.start();
  if (!server::Server::is_loopback(o.host))
    std::cerr << fmt::format(
        "tilescope: warning: serving on {}, reachable from the network; only the token below keeps others "
        "out\n",
        o.host);
  std::cout << fmt::format("tilescope: serving {} ({} launch(es)); open\n  {}\nCtrl-C stops.\n", o.path,
                           q.session().value("launches", 0), srv.url())
            << std::flush;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  srv.stop();
  std::cerr << "tilescope: stopped\n";
  return 0;
}

}  // namespace tilescope::cli
