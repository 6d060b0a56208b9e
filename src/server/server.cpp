// The HTTP server (server.h): cpp-httplib for HTTP, our own checks and route table on top.
#include "tilescope/server/server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
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

// ---------------------------------------------------------------------------------------------
// Connections. httplib 0.11 serves each connection on a thread of a fixed pool and waits on it for the
// next request for seconds: 20 clients that connect and send nothing (or half a request) kept a valid
// request waiting about 10 s (found by a new user). And after answering a request it could not parse (a
// header over its limit, a bad request line, a body over the limit) it read on from the same bytes.
// So: a thread for every connection (ConnectionThreads), and our own loop over a connection's requests
// (HttpServer::process_and_close_socket, the hook httplib offers for it) with deadlines, which closes
// the connection after such an error.

using Clock = std::chrono::steady_clock;
constexpr auto kIdleWait = std::chrono::seconds(5);      // for the first byte of the next request
constexpr auto kRequestRead = std::chrono::seconds(10);  // for a request's head and body, from its first byte
constexpr auto kStopCheck = std::chrono::milliseconds(100);  // a waiting connection looks for stop()
constexpr int kRequestsPerConnection = 100;

// Set by the error handler when httplib itself rejected the request (the connection's bytes after it
// cannot be trusted); read by the connection loop on the same thread.
thread_local bool close_after_response = false;

/// httplib's TaskQueue: a thread per connection, started when every thread is busy (and kept for later
/// connections), up to `max` at once; past that, connections wait for one.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max) : max_(max) {}

  void enqueue(std::function<void()> fn) override {
    std::lock_guard<std::mutex> g(mu_);
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > idle_ && threads_.size() < max_) threads_.emplace_back([this] { work(); });
    cv_.notify_one();
  }

  void shutdown() override {  // after the accept loop ended: no enqueue comes
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> g(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (std::thread& t : threads) t.join();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(g, [this] { return !jobs_.empty() || stopping_; });
      --idle_;
      if (jobs_.empty()) return;  // stopping, and every connection taken
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      g.unlock();
      fn();
      g.lock();
    }
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

/// One connection's socket as httplib's Stream: reads buffered (httplib reads a request line byte by
/// byte) and kept across the connection's requests, each request's reads bounded by a deadline.
class Connection : public httplib::Stream {
 public:
  Connection(socket_t fd, const std::atomic<socket_t>& listening) : fd_(fd), listening_(listening) {}

  /// Wait up to `limit` for the next request's first byte; false when none came, the client closed the
  /// connection, or the server is stopping. Its reads then have until kRequestRead from now.
  bool next_request(Clock::duration limit) {
    if (!readable(Clock::now() + limit)) return false;
    deadline_ = Clock::now() + kRequestRead;
    return true;
  }

  bool is_readable() const override { return readable(deadline_); }

  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    if (poll(&p, 1, 0) < 0 || (p.revents & (POLLERR | POLLHUP))) return false;
    char c;  // a peer that closed its side reads as end of file: nobody is reading what we write
    return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (at_ == end_) {
      if (!readable(deadline_)) return -1;
      const ssize_t n = recv(fd_, buf_.data(), buf_.size(), 0);
      if (n <= 0) return n;
      at_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, end_ - at_);
    std::copy_n(buf_.data() + at_, n, ptr);
    at_ += n;
    return static_cast<ssize_t>(n);
  }

  // A blocking send, bounded by the socket's send timeout (httplib sets SO_SNDTIMEO: write timeout).
  ssize_t write(const char* ptr, size_t size) override { return send(fd_, ptr, size, MSG_NOSIGNAL); }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(false, ip, port); }
  socket_t socket() const override { return fd_; }

  /// Discard what the client still sends, for a moment, before the socket is closed: closing with unread
  /// bytes resets the connection, and the client may lose the response it has not read yet.
  void drain() {
    const Clock::time_point until = Clock::now() + std::chrono::milliseconds(500);
    char scratch[4096];
    while (readable(until) && recv(fd_, scratch, sizeof scratch, 0) > 0) {
    }
  }

 private:
  /// Buffered bytes, or the socket readable (data or end of file) before `deadline`; false past it, on
  /// an error, or once the server stops listening.
  bool readable(Clock::time_point deadline) const {
    if (at_ < end_) return true;
    for (;;) {
      if (listening_.load() == INVALID_SOCKET) return false;
      const auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      const auto wait = std::min<Clock::duration>(left, kStopCheck);
      pollfd p{fd_, POLLIN, 0};
      const int r = poll(&p, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }

  void address(bool peer, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    auto* sa = reinterpret_cast<sockaddr*>(&a);
    if ((peer ? getpeername(fd_, sa, &len) : getsockname(fd_, sa, &len)) != 0) return;
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
      return;
    ip = host;
    port = std::atoi(serv);
  }

  socket_t fd_;
  const std::atomic<socket_t>& listening_;
  std::array<char, 4096> buf_{};
  size_t at_ = 0, end_ = 0;
  Clock::time_point deadline_ = Clock::now();
};

/// httplib's server with our loop over each connection's requests (Connection above).
class HttpServer : public httplib::Server {
 protected:
  bool process_and_close_socket(socket_t sock) override {
    // httplib writes a response's head and body separately: without TCP_NODELAY the body waits for the
    // client's delayed ACK of the head, about 40 ms a request on a kept-alive connection.
    int yes = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    Connection c(sock, svr_sock_);
    bool ok = true;
    for (int n = 1; ok && n <= kRequestsPerConnection && c.next_request(kIdleWait); ++n) {
      close_after_response = false;
      bool closed = false;  // the request asked for it (Connection: close, HTTP/1.0)
      ok = process_request(c, n == kRequestsPerConnection, closed, nullptr);
      if (close_after_response) {
        ::shutdown(sock, SHUT_WR);  // the response is sent; the client sees the end of it
        c.drain();
        break;
      }
      if (closed) break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }
};

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
  HttpServer http;
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

  // Host, Origin and token checks; the token exchange at `/?token=T`; a declared body over the limit.
  // Handled: answered here. A request refused here ends its connection (its body, if any, is not read).
  httplib::Server::HandlerResponse guard(const httplib::Request& req, httplib::Response& res) {
    using Reply = httplib::Server::HandlerResponse;
    auto reject = [&res](int status, std::string_view code, std::string_view message) {
      write_error(res, status, code, message);
      close_after_response = true;
      return Reply::Handled;
    };
    if (req.get_header_value_count("Host") != 1 || !host_allowed(req.get_header_value("Host")))
      return reject(403, "bad_host", "the Host header does not name this server (DNS rebinding?)");
    const std::string host = req.get_header_value("Host");
    // Every Origin header must be this server's (a second one is never the browser's own).
    bool foreign_origin = false;
    for (size_t i = 0, n = req.get_header_value_count("Origin"); i < n; ++i)
      foreign_origin |= req.get_header_value("Origin", i) != "http://" + host;
    if (foreign_origin) return reject(403, "bad_origin", "cross-origin requests are not allowed");
    if (req.get_header_value("Sec-Fetch-Site") == "cross-site")
      return reject(403, "bad_origin", "cross-site requests are not allowed");
    if (req.path == "/" && req.has_param("token")) {
      if (!same_secret(req.get_param_value("token"), token))
        return reject(401, "bad_token",
                      "the token in the URL is not this server's: open the URL tilescope printed");
      res.status = 303;
      res.set_header("Location", "/");
      res.set_header("Set-Cookie",
                     fmt::format("{}={}; HttpOnly; SameSite=Strict; Path=/", cookie_name(), token));
      return Reply::Handled;
    }
    if (!same_secret(presented_token(req), token))
      return reject(401, "unauthorized",
                    "no valid session token: open the URL tilescope printed (it carries the token)");
    // A body declared over the limit: 413 now (httplib would read all of it first, then answer).
    if (req.has_header("Content-Length")) {
      const std::string n = req.get_header_value("Content-Length");
      uint64_t bytes = 0;
      const std::errc ec = std::from_chars(n.data(), n.data() + n.size(), bytes).ec;
      if (ec == std::errc::result_out_of_range || (ec == std::errc() && bytes > options.max_body))
        return reject(413, "body_too_large", status_message(413));
    }
    // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112, 6.3), as
    // `curl -X POST` and a browser's DELETE send it. httplib would wait for one until the read timeout
    // and answer 400: dispatch it here with its empty body.
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding") &&
        (req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE")) {
      dispatch(req, res);
      return Reply::Handled;
    }
    return Reply::Unhandled;
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

  const auto threads = static_cast<size_t>(std::max(1, m.options.threads));
  m.http.new_task_queue = [threads] { return new ConnectionThreads(threads); };
  m.http.set_payload_max_length(m.options.max_body);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second server (another
  // user's process included) bind the same port and take half the connections.
  m.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  m.http.set_write_timeout(30, 0);  // a client that reads nothing holds its thread this long at most
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
  // Errors httplib answers itself (413 body too large, 400 malformed request, 414, 404 for other
  // methods): JSON like ours (our handlers' errors already have a body), and the connection is closed
  // after the response (what follows on it may be the rest of the bad request).
  m.http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    write_error(res, res.status, status_code_name(res.status), status_message(res.status));
    close_after_response = true;
  });
  // After httplib added its Keep-Alive header: say that the connection ends.
  m.http.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (!close_after_response) return;
    res.headers.erase("Keep-Alive");
    res.set_header("Connection", "close");
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
