// The HTTP server (server.h): cpp-httplib for HTTP, our own checks and route table on top.
#include "tilescope/server/server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "tilescope/ir/diag.h"

namespace tilescope::server {

// ---------------------------------------------------------------------------------------------
// Request / Response

nlohmann::json Request::json() const {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "bad_json", "the request body is not valid JSON");
  return j;
}

std::string Request::text(const std::string& name, const std::string& fallback) const {
  if (auto it = params.find(name); it != params.end()) return it->second;
  if (auto it = query.find(name); it != query.end()) return it->second;
  return fallback;
}

int64_t Request::integer(const std::string& name, int64_t lo, int64_t hi) const {
  const bool present = params.count(name) || query.count(name);
  if (!present) throw ApiError(400, "bad_parameter", fmt::format("the parameter '{}' is missing", name));
  return integer(name, lo, hi, 0);
}

int64_t Request::integer(const std::string& name, int64_t lo, int64_t hi, int64_t fallback) const {
  const bool present = params.count(name) || query.count(name);
  if (!present) return fallback;
  const std::string s = text(name);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    throw ApiError(400, "bad_parameter", fmt::format("the parameter '{}' is not an integer", name));
  if (v < lo || v > hi)
    throw ApiError(400, "bad_parameter",
                   fmt::format("the parameter '{}' is {}, outside [{}, {}]", name, v, lo, hi));
  return v;
}

Response Response::json(const nlohmann::json& value, int status) {
  Response r;
  r.status = status;
  r.body = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Server

namespace {

std::string random_token() {
  std::random_device rd;  // getrandom(2) on Linux
  std::string t;
  for (int i = 0; i < 8; ++i) t += fmt::format("{:08x}", rd());
  return t;
}

bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool is_wildcard(std::string_view host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

std::string host_port(std::string_view host, int port) {
  return host.find(':') != std::string_view::npos ? fmt::format("[{}]:{}", host, port)
                                                  : fmt::format("{}:{}", host, port);
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

void write_error(httplib::Response& res, int status, std::string_view code, std::string_view message) {
  res.status = status;
  nlohmann::json j = {{"error", {{"code", code}, {"message", message}}}};
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kJson);
}

std::string_view status_code_name(int status) {
  switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "body_too_large";
    case 414: return "uri_too_long";
    default: return status >= 500 ? "internal_error" : "error";
  }
}

std::string status_message(int status) {
  switch (status) {
    case 400: return "malformed request";
    case 413: return "the request body is too large";
    case 414: return "the request URI is too long";
    default: return fmt::format("HTTP status {}", status);
  }
}

struct CompiledRoute {
  std::string method;
  std::vector<std::string> segments;  // "{name}" binds one segment
  Handler handler;
};

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::vector<CompiledRoute> routes;
  std::map<std::string, Asset> assets;
  std::string token;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  std::mutex mu;
  std::condition_variable stopped_cv;
  bool started = false, stopped = false;
  std::atomic<bool> ended{false};  // the listen loop returned

  std::string cookie_name() const { return fmt::format("tilescope-{}", port); }

  bool host_allowed(const std::string& host_header) const {
    if (is_wildcard(options.host)) return true;
    for (std::string_view h : {"127.0.0.1", "localhost", "::1"})
      if (host_header == host_port(h, port)) return true;
    return !is_loopback(options.host) && host_header == host_port(options.host, port);
  }

  std::string presented_token(const httplib::Request& req) const {
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) return auth.substr(7);
    const std::string cookies = req.get_header_value("Cookie");
    const std::string key = cookie_name() + "=";
    for (size_t i = 0; i < cookies.size();) {
      while (i < cookies.size() && (cookies[i] == ' ' || cookies[i] == ';')) ++i;
      size_t j = cookies.find(';', i);
      if (j == std::string::npos) j = cookies.size();
      std::string_view c(cookies.data() + i, j - i);
      if (c.substr(0, key.size()) == key) return std::string(c.substr(key.size()));
      i = j;
    }
    return "";
  }

  // Host, Origin and token checks; the token exchange at `/?token=T`. Handled: answered here.
  httplib::Server::HandlerResponse guard(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value_count("Host") != 1 || !host_allowed(req.get_header_value("Host"))) {
      write_error(res, 403, "bad_host", "the Host header does not name this server (DNS rebinding?)");
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string host = req.get_header_value("Host");
    // Every Origin header must be this server's (a second one is never the browser's own).
    bool foreign_origin = false;
    for (size_t i = 0, n = req.get_header_value_count("Origin"); i < n; ++i)
      foreign_origin |= req.get_header_value("Origin", i) != "http://" + host;
    if (foreign_origin) {
      write_error(res, 403, "bad_origin", "cross-origin requests are not allowed");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.get_header_value("Sec-Fetch-Site") == "cross-site") {
      write_error(res, 403, "bad_origin", "cross-site requests are not allowed");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/" && req.has_param("token")) {
      if (!same_secret(req.get_param_value("token"), token)) {
        write_error(res, 401, "bad_token",
                    "the token in the URL is not this server's: open the URL tilescope printed");
        return httplib::Server::HandlerResponse::Handled;
      }
      res.status = 303;
      res.set_header("Location", "/");
      res.set_header("Set-Cookie",
                     fmt::format("{}={}; HttpOnly; SameSite=Strict; Path=/", cookie_name(), token));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!same_secret(presented_token(req), token)) {
      write_error(res, 401, "unauthorized",
                  "no valid session token: open the URL tilescope printed (it carries the token)");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112, 6.3), as
    // `curl -X POST` and a browser's DELETE send it. httplib would wait for one until the read timeout
    // and answer 400: dispatch it here with its empty body.
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding") &&
        (req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE")) {
      dispatch(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void dispatch(const httplib::Request& req, httplib::Response& res) {
    const std::vector<std::string> segs = split_path(req.path);
    bool path_matched = false;
    for (const CompiledRoute& r : routes) {
      if (r.segments.size() != segs.size()) continue;
      Request q;
      bool ok = true;
      for (size_t i = 0; i < segs.size() && ok; ++i) {
        const std::string& p = r.segments[i];
        if (p.size() > 2 && p.front() == '{' && p.back() == '}')
          q.params[p.substr(1, p.size() - 2)] = segs[i];
        else
          ok = p == segs[i];
      }
      if (!ok) continue;
      path_matched = true;
      if (r.method != req.method && !(req.method == "HEAD" && r.method == "GET")) continue;
      q.method = req.method;
      q.path = req.path;
      for (const auto& [k, v] : req.params) q.query.emplace(k, v);
      q.body = req.body;
      try {
        Response out = r.handler(q);
        res.status = out.status;
        if (out.stream) {
          res.set_chunked_content_provider(
              out.content_type, [stream = std::move(out.stream)](size_t, httplib::DataSink& sink) {
                try {
                  stream([&sink](std::string_view piece) {
                    return piece.empty() || sink.write(piece.data(), piece.size());
                  });
                } catch (...) {  // the response ends here; the server goes on
                  return false;
                }
                sink.done();
                return true;
              });
        } else {
          res.set_content(out.body, out.content_type);
        }
      } catch (const ApiError& e) {
        write_error(res, e.status, e.code, e.what());
      } catch (const std::exception& e) {
        write_error(res, 500, "internal_error", e.what());
      } catch (...) {
        write_error(res, 500, "internal_error", "unknown error");
      }
      return;
    }
    if (path_matched)
      return write_error(res, 405, "method_not_allowed",
                         fmt::format("{} is not allowed on {}", req.method, req.path));
    if (req.method == "GET" || req.method == "HEAD") {
      auto it = assets.find(req.path == "/" ? "/index.html" : req.path);
      if (it != assets.end()) {
        res.status = 200;
        res.set_content(it->second.body, it->second.content_type);
        return;
      }
    }
    write_error(res, 404, "not_found", fmt::format("no such resource: {}", req.path));
  }
};

Server::Server(ServerOptions options, std::vector<Route> routes, std::map<std::string, Asset> assets)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = std::move(options);
  m.token = m.options.token.empty() ? random_token() : m.options.token;
  m.assets = std::move(assets);
  for (Route& r : routes) m.routes.push_back({r.method, split_path(r.pattern), std::move(r.handler)});

  const int threads = std::max(1, m.options.threads);
  m.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  m.http.set_payload_max_length(m.options.max_body);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second server (another
  // user's process included) bind the same port and take half the connections.
  m.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  m.http.set_read_timeout(5, 0);  // an idle or half-sent connection holds a thread this long at most
  m.http.set_write_timeout(30, 0);
  m.http.set_default_headers(
      {{"X-Content-Type-Options", "nosniff"},
       {"X-Frame-Options", "DENY"},
       {"Referrer-Policy", "no-referrer"},
       {"Cache-Control", "no-store"},
       {"Content-Security-Policy",
        "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
        "frame-ancestors 'none'"}});
  m.http.set_pre_routing_handler(
      [&m](const httplib::Request& req, httplib::Response& res) { return m.guard(req, res); });
  auto any = [&m](const httplib::Request& req, httplib::Response& res) { m.dispatch(req, res); };
  m.http.Get(".*", any);
  m.http.Post(".*", any);
  m.http.Put(".*", any);
  m.http.Patch(".*", any);
  m.http.Delete(".*", any);
  // Errors httplib answers itself (413 body too large, 400 malformed request, 404 for other methods):
  // JSON like ours, unless a handler already wrote a body.
  m.http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty())
      write_error(res, res.status, status_code_name(res.status), status_message(res.status));
  });
  m.http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr& ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        write_error(res, 500, "internal_error", what);
      });
}

Server::~Server() { stop(); }

void Server::start() {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu);
  if (m.started) return;
  {
    // An address that names nothing gets its own message (httplib's bind says only that it failed).
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(m.options.host.c_str(), nullptr, &hints, &found);
    if (found) freeaddrinfo(found);
    if (rc != 0)
      throw Error(
          fmt::format("cannot listen on {}: '{}' is not an IP address or a host name this machine "
                      "resolves ({})",
                      host_port(m.options.host, m.options.port), m.options.host, gai_strerror(rc)));
  }
  const int port = m.options.port == 0
                       ? m.http.bind_to_any_port(m.options.host)
                       : (m.http.bind_to_port(m.options.host, m.options.port) ? m.options.port : -1);
  if (port <= 0)
    throw Error(
        fmt::format("cannot listen on {}: the port is in use, or the address is not one of this "
                    "machine's",
                    host_port(m.options.host, m.options.port)));
  m.port = port;
  m.started = true;
  m.thread = std::thread([&m] {
    m.http.listen_after_bind();
    m.ended = true;
    std::lock_guard<std::mutex> g2(m.mu);
    m.stopped = true;
    m.stopped_cv.notify_all();
  });
  // Serving before returning: a stop() that came before the listen loop began would not reach it.
  while (!m.http.is_running() && !m.ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void Server::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> g(m.mu);
    if (!m.started) return;
  }
  m.http.stop();
  if (m.thread.joinable() && m.thread.get_id() != std::this_thread::get_id()) m.thread.join();
}

void Server::wait() {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> g(m.mu);
  m.stopped_cv.wait(g, [&] { return !m.started || m.stopped; });
}

int Server::port() const { return impl_->port; }
const std::string& Server::token() const { return impl_->token; }

std::string Server::url() const {
  const std::string& h = impl_->options.host;
  const std::string shown = is_wildcard(h) ? "127.0.0.1" : h;
  return fmt::format("http://{}/?token={}", host_port(shown, impl_->port), impl_->token);
}

bool Server::is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace tilescope::server
