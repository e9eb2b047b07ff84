// ControlServer over real sockets: the requests the signals set, the answers' state and step,
// `?wait=`, the token, and the limits that keep a flood or a slow client from stalling anyone.
#include "catch.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "http_client.hpp"
#include "test_support.hpp"
#include "yolotrain/endpoint/control_server.hpp"

namespace ye = yolotrain::endpoint;
namespace lc = yolotrain::lifecycle;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

// The part of a training loop a ControlServer sees: it acts on the token's requests the way the
// trainer does (pausing -> paused, a checkpoint written, a stop -> stopped), on a thread.
class FakeLoop {
 public:
  FakeLoop(lc::ControlToken& token, lc::RunStatus& status) : token_(token), status_(status) {
    status_.set_state(lc::RunState::Running);
    thread_ = std::thread([this] { run(); });
  }
  ~FakeLoop() {
    done_ = true;
    token_.request_resume();  // wakes it
    thread_.join();
  }

 private:
  void run() {
    std::int64_t step = 0;
    while (!done_) {
      token_.wait_for_request(20ms);
      status_.set_progress(++step, 0);
      if (token_.take_checkpoint_request()) status_.set_checkpoint("ckpt", step, 0);
      if (token_.stop_requested()) {
        status_.set_state(lc::RunState::Stopped);
        return;
      }
      if (token_.pause_requested()) {
        status_.set_state(lc::RunState::Pausing);
        status_.set_checkpoint("ckpt", step, 0);
        status_.set_state(lc::RunState::Paused);
        token_.wait_while_paused();
        if (done_ || token_.stop_requested()) continue;
        status_.set_state(lc::RunState::Running);
      }
    }
  }
  lc::ControlToken& token_;
  lc::RunStatus& status_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("the control endpoint sets what the signals set and answers with the state and step", "[endpoint]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  ye::ControlServer server(token);
  const int port = server.port();
  REQUIRE(port > 0);
  CHECK(server.url() == "http://127.0.0.1:" + std::to_string(port));

  // Before the run's status exists: "starting", and a request still reaches the token.
  CHECK(yt::http_request(port, "GET", "/v1/status").status == 503);
  auto r = yt::http_request(port, "POST", "/v1/pause");
  CHECK(r.status == 202);
  CHECK(r.json()["state"] == "starting");
  CHECK(token.pause_requested());
  token.reset();

  server.attach(status);
  status.set_run_label("r1");
  status.set_state(lc::RunState::Running);
  status.set_progress(7, 0);
  r = yt::http_request(port, "POST", "/v1/pause");
  CHECK(r.status == 202);
  CHECK(r.json() == nlohmann::json::parse(R"({"request":"pause","state":"running","step":7,"acts_at_step":8,
                                              "reached":false})"));
  CHECK(token.pause_requested());
  CHECK(yt::http_request(port, "POST", "/v1/resume").status == 200);  // running already
  CHECK_FALSE(token.pause_requested());
  CHECK(yt::http_request(port, "POST", "/v1/checkpoint").status == 202);
  CHECK(token.checkpoint_requested());

  r = yt::http_request(port, "GET", "/v1/status");
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "running");
  CHECK(r.json()["step"] == 7);
  const auto requests = r.json()["requests"];
  REQUIRE(requests.size() == 3);  // the one made while starting had no status to go into
  CHECK(requests[0]["request"] == "pause (POST /v1/pause from 127.0.0.1)");
  r = yt::http_request(port, "GET", "/metrics");
  CHECK(r.status == 200);
  CHECK_THAT(r.headers, Catch::Contains("text/plain; version=0.0.4"));
  CHECK_THAT(r.body, Catch::Contains("yolotrain_state{run=\"r1\",state=\"running\"} 1"));
  CHECK_THAT(r.body, Catch::Contains("yolotrain_step{run=\"r1\"} 7"));
  r = yt::http_request(port, "GET", "/healthz");
  CHECK(r.status == 200);
  CHECK(r.body == "ok\n");

  r = yt::http_request(port, "POST", "/v1/stop");
  CHECK(r.status == 202);
  CHECK(token.stop_reason() == lc::StopReason::Remote);
  CHECK(token.stop_description() == "remote");
  status.set_state(lc::RunState::Stopped);
  r = yt::http_request(port, "POST", "/v1/pause");
  CHECK(r.status == 409);  // the run has ended: nothing is asked of it
  CHECK(r.json()["state"] == "stopped");
  CHECK(r.json()["acts_at_step"].is_null());
}

TEST_CASE("?wait= answers once the run is in the state asked for, or when its time is up", "[endpoint]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  ye::ControlServer server(token);
  server.attach(status);
  const int port = server.port();
  FakeLoop loop(token, status);

  auto r = yt::http_request(port, "POST", "/v1/pause?wait=60");
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "paused");
  CHECK(r.json()["reached"] == true);
  // While paused, the pause's checkpoint holds the current step: nothing more to write.
  r = yt::http_request(port, "POST", "/v1/checkpoint?wait=60");
  CHECK(r.status == 200);
  CHECK_FALSE(token.checkpoint_requested());
  r = yt::http_request(port, "POST", "/v1/resume?wait=60");
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "running");
  const std::uint64_t before = status.checkpoints();
  r = yt::http_request(port, "POST", "/v1/checkpoint?wait=60");
  CHECK(r.status == 200);
  CHECK(status.checkpoints() > before);

  CHECK(yt::http_request(port, "POST", "/v1/pause?wait=soon").status == 400);
  CHECK(yt::http_request(port, "POST", "/v1/pause?wait=-1").status == 400);
  CHECK(yt::http_request(port, "POST", "/v1/pause?wait=99999").status == 400);
  CHECK_FALSE(token.pause_requested());  // refused requests set nothing

  r = yt::http_request(port, "POST", "/v1/stop?wait=60");
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "stopped");
}

TEST_CASE("a wait not carried out answers 202 when its time is up, or at once when the server closes",
          "[endpoint]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  status.set_state(lc::RunState::Running);
  auto server = std::make_unique<ye::ControlServer>(token);
  server->attach(status);
  const int port = server->port();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = yt::http_request(port, "POST", "/v1/checkpoint?wait=0.3");  // nothing writes it here
  CHECK(std::chrono::steady_clock::now() - t0 >= 300ms);
  CHECK(r.status == 202);
  CHECK(r.json()["reached"] == false);

  auto waiting = std::async(std::launch::async, [&] { return yt::http_request(port, "POST", "/v1/pause?wait=600"); });
  REQUIRE(yt::wait_until([&] { return token.pause_requested(); }, 30s));
  server->close();  // the end of a run: the waiting request hears where it stands
  r = waiting.get();
  CHECK(r.status == 202);
  CHECK(r.json()["state"] == "running");
  CHECK(yt::http_request(port, "GET", "/healthz", "", 2s).status == 0);  // no longer listening
}

TEST_CASE("a wait outlasts the idle and request time limits: a suspended request is not cut off", "[endpoint]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  status.set_state(lc::RunState::Running);
  ye::ControlServerOptions o;
  o.idle_timeout = 1000ms;
  o.request_timeout = 1000ms;
  ye::ControlServer server(token, o);
  server.attach(status);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = yt::http_request(server.port(), "POST", "/v1/checkpoint?wait=2.5");
  CHECK(std::chrono::steady_clock::now() - t0 >= 2500ms);
  CHECK(r.status == 202);
  CHECK(r.json()["reached"] == false);
}

TEST_CASE("with a token: missing or wrong is 401 and changes nothing, only the listed paths and methods",
          "[endpoint]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  ye::ControlServerOptions o;
  o.token = "c0rrect-horse";
  ye::ControlServer server(token, o);
  server.attach(status);
  const int port = server.port();
  for (const std::string& given : {std::string(), std::string("wrong"), std::string("c0rrect-hors")}) {
    const auto r = yt::http_request(port, "POST", "/v1/stop", given);
    CHECK(r.status == 401);
    CHECK_THAT(r.headers, Catch::Contains("WWW-Authenticate: Bearer"));
    CHECK(r.body == "unauthorized\n");
    CHECK(yt::http_request(port, "GET", "/v1/status", given).status == 401);
    CHECK(yt::http_request(port, "GET", "/metrics", given).status == 401);
    CHECK(yt::http_request(port, "GET", "/nowhere", given).status == 401);  // no token, no map of the paths
  }
  CHECK_FALSE(token.stop_requested());
  CHECK(status.json().find("c0rrect") == std::string::npos);
  CHECK(yt::http_request(port, "GET", "/healthz").status == 200);  // a liveness probe has no token

  const std::string t = o.token;
  CHECK(yt::http_request(port, "GET", "/nowhere", t).status == 404);
  auto r = yt::http_request(port, "GET", "/v1/pause", t);
  CHECK(r.status == 405);
  CHECK_THAT(r.headers, Catch::Contains("Allow: POST"));
  CHECK(yt::http_request(port, "DELETE", "/v1/status", t).status == 405);
  CHECK(yt::http_request(port, "POST", "/metrics", t).status == 405);
  CHECK(yt::http_request(port, "POST", "/v1/checkpoint", t).status == 202);
  CHECK(token.checkpoint_requested());

  ye::ControlServerOptions open;
  open.address = ye::parse_listen_address("0.0.0.0:0");
  CHECK_THROWS_WITH(ye::ControlServer(token, open), Catch::Contains("control_token_file"));
}

TEST_CASE("a port in use is named, with what to do", "[endpoint]") {
  lc::ControlToken token;
  ye::ControlServer first(token);
  ye::ControlServerOptions o;
  o.address.port = first.port();
  CHECK_THROWS_AS(ye::ControlServer(token, o), ye::ListenError);
  CHECK_THROWS_WITH(ye::ControlServer(token, o),
                    Catch::Contains(std::to_string(first.port())) && Catch::Contains("in use") &&
                        Catch::Contains("port 0"));
}

TEST_CASE("a 100 MB body, 10,000 headers, a trickling client and 500 idle connections stall no one", "[endpoint]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  status.set_state(lc::RunState::Running);
  ye::ControlServerOptions o;
  o.request_timeout = 1000ms;  // short, for the trickle below
  ye::ControlServer server(token, o);
  server.attach(status);
  const int port = server.port();

  // A body announced at 100 MB: refused from its headers, before any of it is read.
  auto r = yt::http_raw(port, "POST /v1/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n");
  CHECK(r.status == 413);
  // ... or sent without a length (chunked): the connection closed, unanswered, once past the limit.
  r = yt::http_raw(port, "POST /v1/stop HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
                             std::string(0x800, 'x') + "\r\n0\r\n\r\n");
  CHECK(r.status == 0);
  CHECK_FALSE(token.stop_requested());

  // 10,000 headers: past the request's memory; 150 small ones: past the count.
  std::string many = "GET /v1/status HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 10000; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  r = yt::http_raw(port, many + "\r\n");
  CHECK((r.status == 431 || r.status == 413));
  std::string some = "GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  for (int i = 0; i < 150; ++i) some += "X-" + std::to_string(i) + ": v\r\n";
  CHECK(yt::http_raw(port, some + "\r\n").status == 431);

  // A client sending a byte now and then: cut off once request_timeout has passed, and nobody
  // waits for it meanwhile.
  const int slow = yt::http_connect(port);
  REQUIRE(slow >= 0);
  yt::http_send(slow, "G");
  CHECK(yt::http_request(port, "GET", "/healthz", "", 5s).status == 200);
  bool cut_off = false;
  for (int i = 0; i < 100 && !cut_off; ++i) {  // one byte per 100 ms until the server closes
    cut_off = !yt::http_send(slow, "E");
    pollfd p{slow, POLLIN, 0};
    char c = 0;
    if (::poll(&p, 1, 100) > 0 && ::recv(slow, &c, 1, MSG_DONTWAIT) <= 0) cut_off = true;
  }
  ::close(slow);
  CHECK(cut_off);

  // 500 connections held open: a request still answers.
  std::vector<int> idle;
  for (int i = 0; i < 500; ++i) {
    const int fd = yt::http_connect(port);
    if (fd >= 0) idle.push_back(fd);
  }
  CHECK(idle.size() == 500);
  r = yt::http_request(port, "GET", "/v1/status", "", 10s);
  CHECK(r.status == 200);
  CHECK(yt::http_request(port, "POST", "/v1/checkpoint", "", 10s).status == 202);
  for (int fd : idle) ::close(fd);
}
