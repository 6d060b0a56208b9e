// The HTTP server's security model and error handling (include/tilescope/server/server.h), over real
// sockets: httplib's client for ordinary calls, raw requests where the test must control every header.
#include "tilescope/server/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tilescope/ir/diag.h"

namespace tilescope::server {
namespace {

std::vector<Route> test_routes() {
  return {
      {"GET", "/api/echo/{id}",
       [](const Request& r) {
         return Response::json({{"id", r.integer("id", 0, 100)}, {"q", r.text("q", "none")}});
       }},
      {"POST", "/api/sum",
       [](const Request& r) {
         auto j = r.json();
         return Response::json({{"sum", j.at("a").get<int>() + j.at("b").get<int>()}});
       }},
      {"POST", "/api/body",
       [](const Request& r) {
         return Response::json({{"bytes", r.body.size()}, {"method", r.method}});
       }},
      {"DELETE", "/api/body",
       [](const Request& r) {
         return Response::json({{"bytes", r.body.size()}, {"method", r.method}});
       }},
      {"GET", "/api/fail", [](const Request&) -> Response { throw std::runtime_error("handler broke"); }},
      {"GET", "/api/missing",
       [](const Request&) -> Response { throw ApiError(404, "no_launch", "no launch 7"); }},
  };
}

std::map<std::string, Asset> test_assets() {
  return {{"/index.html", {"text/html", "<!doctype html><title>tilescope</title>"}},
          {"/assets/app.js", {"text/javascript", "console.log(1)"}}};
}

struct Served {
  Server server{ServerOptions{}, test_routes(), test_assets()};
  Served() { server.start(); }
  httplib::Client client() { return httplib::Client("127.0.0.1", server.port()); }
  httplib::Headers auth() { return {{"Authorization", "Bearer " + server.token()}}; }
};

/// Send `request` (a whole HTTP/1.1 request) on a fresh connection; the raw response, read until the
/// server closes the connection (a request with `Connection: close`, or one it rejects).
std::string raw(int port, const std::string& request, int timeout_s = 5) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  timeval limit{timeout_s, 0};  // a server that never answers fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

int status_of(const std::string& response) {
  return response.size() > 12 ? std::atoi(response.substr(9, 3).c_str()) : 0;
}

std::string get(const Served& s, const std::string& path, const std::string& host,
                const std::string& extra = "") {
  return raw(s.server.port(), "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " +
                                  s.server.token() + "\r\n" + extra + "Connection: close\r\n\r\n");
}

TEST(Server, BindsLoopbackOnAFreePortAndPrintsAUrlWithTheToken) {
  Served s;
  EXPECT_GT(s.server.port(), 0);
  EXPECT_EQ(s.server.token().size(), 64u);
  EXPECT_EQ(s.server.url(),
            "http://127.0.0.1:" + std::to_string(s.server.port()) + "/?token=" + s.server.token());
  Served t;  // a second server has its own token
  EXPECT_NE(s.server.token(), t.server.token());
}

TEST(Server, EveryRequestNeedsTheToken) {
  Served s;
  auto c = s.client();
  for (const char* path : {"/api/echo/3", "/", "/index.html", "/api/nope"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    auto j = nlohmann::json::parse(r->body);
    EXPECT_EQ(j["error"]["code"], "unauthorized");
  }
  auto wrong = c.Get("/api/echo/3", {{"Authorization", "Bearer " + std::string(64, '0')}});
  EXPECT_EQ(wrong->status, 401);
  auto ok = c.Get("/api/echo/3?q=x", s.auth());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(nlohmann::json::parse(ok->body), (nlohmann::json{{"id", 3}, {"q", "x"}}));
}

TEST(Server, TheUrlTokenBecomesAStrictHttpOnlyCookie) {
  Served s;
  auto c = s.client();
  auto bad = c.Get("/?token=" + std::string(64, 'a'));
  EXPECT_EQ(bad->status, 401);
  auto r = c.Get("/?token=" + s.server.token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 303);
  EXPECT_EQ(r->get_header_value("Location"), "/");
  const std::string cookie = r->get_header_value("Set-Cookie");
  const std::string name = "tilescope-" + std::to_string(s.server.port());
  EXPECT_EQ(cookie.rfind(name + "=" + s.server.token() + ";", 0), 0u) << cookie;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  // The cookie authorizes the page and the API; another server's cookie name does not.
  auto page = c.Get("/", {{"Cookie", "other=1; " + name + "=" + s.server.token()}});
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->body, "<!doctype html><title>tilescope</title>");
  EXPECT_EQ(page->get_header_value("X-Frame-Options"), "DENY");
  auto other = c.Get("/", {{"Cookie", "tilescope-1=" + s.server.token()}});
  EXPECT_EQ(other->status, 401);
}

TEST(Server, WrongHostIsRejected) {
  Served s;
  const std::string p = std::to_string(s.server.port());
  EXPECT_EQ(status_of(get(s, "/api/echo/1", "127.0.0.1:" + p)), 200);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", "localhost:" + p)), 200);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", "[::1]:" + p)), 200);
  const std::vector<std::string> hosts = {"evil.example:" + p, "127.0.0.1:1", "localhost",
                                          "127.0.0.1.evil.example:" + p};
  for (const std::string& host : hosts) {
    std::string r = get(s, "/api/echo/1", host);
    EXPECT_EQ(status_of(r), 403) << host;
    EXPECT_NE(r.find("bad_host"), std::string::npos) << host;
  }
}

TEST(Server, CrossOriginRequestsAreRejected) {
  Served s;
  const std::string host = "127.0.0.1:" + std::to_string(s.server.port());
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, "Origin: http://" + host + "\r\n")), 200);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, "Origin: http://evil.example\r\n")), 403);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, "Origin: null\r\n")), 403);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, "Origin: https://" + host + "\r\n")), 403);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, "Sec-Fetch-Site: cross-site\r\n")), 403);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, "Sec-Fetch-Site: same-origin\r\n")), 200);
  // Two Origin headers, in either order: one foreign is enough to refuse (found by a new user).
  const std::string mine = "Origin: http://" + host + "\r\n", evil = "Origin: http://evil.example\r\n";
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, mine + evil)), 403);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, evil + mine)), 403);
  EXPECT_EQ(status_of(get(s, "/api/echo/1", host, mine + mine)), 200);
}

TEST(Server, BadRequestsGetJsonErrorsAndTheServerKeepsServing) {
  Served s;
  auto c = s.client();
  auto expect = [&](const httplib::Result& r, int status, const std::string& code) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r->body;
    EXPECT_EQ(j["error"]["code"], code) << r->body;
  };
  expect(c.Get("/api/echo/x", s.auth()), 400, "bad_parameter");
  expect(c.Get("/api/echo/101", s.auth()), 400, "bad_parameter");
  expect(c.Get("/api/echo/12abc", s.auth()), 400, "bad_parameter");
  expect(c.Post("/api/sum", s.auth(), "{not json", "application/json"), 400, "bad_json");
  expect(c.Post("/api/sum", s.auth(), R"({"a": "one", "b": 2})", "application/json"), 500, "internal_error");
  expect(c.Get("/api/fail", s.auth()), 500, "internal_error");
  expect(c.Get("/api/missing", s.auth()), 404, "no_launch");
  expect(c.Get("/api/nope", s.auth()), 404, "not_found");
  expect(c.Post("/api/echo/3", s.auth(), "{}", "application/json"), 405, "method_not_allowed");
  expect(c.Delete("/index.html", s.auth()), 404, "not_found");
  expect(c.Post("/api/sum", s.auth(), std::string((1 << 20) + 10, ' '), "application/json"), 413,
         "body_too_large");
  // Garbage on the socket does not stop the server.
  EXPECT_EQ(status_of(raw(s.server.port(), "\x16\x03\x01 not http at all\r\n\r\n", 1)), 400);
  raw(s.server.port(), "GET /api/echo/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n", 1);
  auto ok = c.Post("/api/sum", s.auth(), R"({"a": 2, "b": 3})", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(nlohmann::json::parse(ok->body)["sum"], 5);
}

TEST(Server, ARequestWithoutContentLengthHasAnEmptyBody) {
  // RFC 9112, 6.3: a request with neither Content-Length nor Transfer-Encoding has no body (what
  // `curl -X POST URL` sends). Answered at once, not after the server's 5-second read timeout.
  Served s;
  for (const std::string method : {"POST", "DELETE"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string r =
        raw(s.server.port(),
            method + " /api/body HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.server.port()) +
                "\r\nAuthorization: Bearer " + s.server.token() + "\r\nConnection: close\r\n\r\n");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(status_of(r), 200) << r;
    EXPECT_LT(seconds, 2.5) << method;
    const auto j = nlohmann::json::parse(r.substr(r.find("\r\n\r\n") + 4), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r;
    EXPECT_EQ(j["bytes"], 0);
    EXPECT_EQ(j["method"], method);
  }
  // Still behind the token, and a body with its length, or chunked, is read as before.
  const std::string noauth =
      raw(s.server.port(), "POST /api/body HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.server.port()) +
                               "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(noauth), 401) << noauth;
  auto c = s.client();
  auto with = c.Post("/api/body", s.auth(), "{\"a\": 1}", "application/json");
  ASSERT_TRUE(with);
  EXPECT_EQ(nlohmann::json::parse(with->body)["bytes"], 8);
  const std::string chunked =
      raw(s.server.port(),
          "POST /api/body HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.server.port()) +
              "\r\nAuthorization: Bearer " + s.server.token() +
              "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(chunked), 200) << chunked;
  EXPECT_NE(chunked.find("\"bytes\":3"), std::string::npos) << chunked;
}

TEST(Server, AssetsAreServedFromTheTableOnly) {
  Served s;
  auto c = s.client();
  auto js = c.Get("/assets/app.js", s.auth());
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript");
  EXPECT_EQ(js->get_header_value("X-Content-Type-Options"), "nosniff");
  for (const char* path : {"/../../etc/passwd", "/assets/../index.html.bak", "/etc/passwd", "/assets/"})
    EXPECT_EQ(c.Get(path, s.auth())->status, 404) << path;
}

TEST(Server, ConcurrentRequestsAreAllAnswered) {
  Served s;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto c = s.client();
      for (int i = 0; i < 25; ++i) {
        auto r = c.Get("/api/echo/" + std::to_string((t * 25 + i) % 100), s.auth());
        if (r && r->status == 200 && nlohmann::json::parse(r->body)["id"] == (t * 25 + i) % 100) ++ok;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
}

TEST(Server, APortInUseIsAClearError) {
  Served s;
  ServerOptions o;
  o.port = s.server.port();
  Server second(o, {}, {});
  try {
    second.start();
    FAIL() << "bound a port in use";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(o.port)), std::string::npos)
        << e.what();
  }
}

TEST(Server, AnAddressThatNamesNothingIsAClearError) {
  for (const std::string host : {"999.1.1.1", "bad host!"}) {
    ServerOptions o;
    o.host = host;
    Server s(o, {}, {});
    try {
      s.start();
      FAIL() << "listened on " << host;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'" + host + "' is not an IP address or a host name"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Server, StopEndsWaitAndIsIdempotent) {
  Served s;
  std::thread waiter([&] { s.server.wait(); });
  s.server.stop();
  waiter.join();
  s.server.stop();
  EXPECT_FALSE(s.client().Get("/api/echo/1", s.auth()));
}

TEST(Server, LoopbackNames) {
  EXPECT_TRUE(Server::is_loopback("127.0.0.1"));
  EXPECT_TRUE(Server::is_loopback("127.1.2.3"));
  EXPECT_TRUE(Server::is_loopback("::1"));
  EXPECT_TRUE(Server::is_loopback("localhost"));
  EXPECT_FALSE(Server::is_loopback("0.0.0.0"));
  EXPECT_FALSE(Server::is_loopback("10.0.0.1"));
  EXPECT_FALSE(Server::is_loopback("1270.0.0.1"));
}

}  // namespace
}  // namespace tilescope::server
