// tilescope/server: the HTTP server behind `tilescope view` (the visualizer's JSON API and its bundled
// assets; the assistant's endpoints join the same route table).
//
// Security model (README, "Web visualizer: security"), enforced here for every request, before any
// route runs:
//   - Bind: 127.0.0.1 by default; another address only when the user asks (ServerOptions::host).
//   - Session token: 256 random bits (hex), made at start. The printed URL carries it once:
//     `GET /?token=T` sets the cookie `tilescope-<port>` (HttpOnly, SameSite=Strict, Path=/) and
//     redirects to `/`. Every other request must carry the token, as that cookie or as
//     `Authorization: Bearer T` (for scripts); compared in constant time. Missing or wrong: 401.
//   - Host: on a loopback bind, the Host header must name a loopback address with the server's port
//     (127.0.0.1:P, localhost:P, [::1]:P): a DNS-rebinding page cannot reach the API. On an explicit
//     host, that host:P or a loopback one; on a wildcard bind (0.0.0.0, ::) any Host (the token
//     alone guards it; the command warns). Wrong: 403.
//   - Origin: when the browser sends one, it must be http://<the request's Host>; "null" and other
//     origins are rejected, and so is `Sec-Fetch-Site: cross-site` (a cross-site request): 403.
//   - No route takes a filesystem path: assets are an in-memory table given at construction, and what
//     the routes read (the trace) is opened by the command, read-only.
//   - Bodies over ServerOptions::max_body bytes: 413. A handler's ApiError becomes its status; any
//     other exception a 500 with its message: a request never stops the server.
// Every error is JSON: {"error": {"code": "not_found", "message": "..."}}.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tilescope::server {

/// The API's one error type: an HTTP status, a stable machine-readable code and a message for people.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status(status), code(std::move(code)) {}
  const int status;
  const std::string code;
};

struct Request {
  std::string method;                         // "GET", "POST", ...
  std::string path;                           // "/api/launches/3"
  std::map<std::string, std::string> params;  // path parameters named in the route's pattern ({id})
  std::multimap<std::string, std::string> query;
  std::string body;

  /// The body parsed as JSON; ApiError 400 "bad_json" when it is not.
  nlohmann::json json() const;
  /// Path parameter or query value `name` as an integer in [lo, hi]; ApiError 400 "bad_parameter"
  /// when it is missing (and no default is given), not an integer, or out of range.
  int64_t integer(const std::string& name, int64_t lo, int64_t hi) const;
  int64_t integer(const std::string& name, int64_t lo, int64_t hi, int64_t fallback) const;
  /// Path parameter or query value `name`, or `fallback` when absent.
  std::string text(const std::string& name, const std::string& fallback = "") const;
};

/// The content type of JSON answers. With its charset it is also not one cpp-httplib compresses on the
/// fly: its brotli runs at the highest quality, which costs about 5 ms per 1 KB (1.7 s for a 350 KB
/// script), far more than sending the bytes over loopback.
inline constexpr const char* kJson = "application/json; charset=utf-8";

/// Sends one piece of a streamed body; false once the client has gone (the stream should then stop).
using Writer = std::function<bool(std::string_view)>;

struct Response {
  int status = 200;
  std::string content_type = kJson;
  std::string body;
  /// A streamed body instead of `body` (chunked transfer encoding, e.g. text/event-stream): called once,
  /// on the request's thread, after the handler returned; it writes through the Writer until it is done
  /// or a write fails. It must not throw (an exception ends the response).
  std::function<void(const Writer&)> stream;
  static Response json(const nlohmann::json& value, int status = 200);
};

using Handler = std::function<Response(const Request&)>;

/// One row of the route table. `pattern` is a path whose segments are literals or `{name}` (one
/// segment, bound into Request::params): "/api/launches/{launch}/programs".
struct Route {
  std::string method;
  std::string pattern;
  Handler handler;
};

/// A bundled file served at its path ("/index.html", "/assets/app.js").
struct Asset {
  std::string content_type;
  std::string body;
};

struct ServerOptions {
  std::string host = "127.0.0.1";     // the address to bind
  int port = 0;                       // 0: a free port
  size_t max_body = size_t{1} << 20;  // bytes
  int threads = 128;                  // connections served at once, a thread each (started as needed)
  std::string token;                  // empty: a fresh random one
};

/// The HTTP server. Routes and assets are fixed at construction; start() binds and serves on
/// background threads until stop() (or destruction).
class Server {
 public:
  Server(ServerOptions options, std::vector<Route> routes, std::map<std::string, Asset> assets);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Bind and start serving; tilescope::Error when the address cannot be bound (naming it).
  void start();
  /// Stop serving (idempotent; safe from any thread but not from a signal handler) and join.
  void stop();
  /// Block until the server stops.
  void wait();

  int port() const;
  const std::string& token() const;
  /// The URL to open: http://HOST:PORT/?token=T (a loopback name when bound to a wildcard address).
  std::string url() const;
  /// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
  static bool is_loopback(std::string_view host);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::server
