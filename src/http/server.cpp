#include "http/server.h"

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "core/error.h"
#include "http/connection.h"

namespace seam::http {

namespace {

Response plain_error(int status, const std::string& message) { return Response(status, "text/plain", message + "\n"); }

// Every connection is a file descriptor: lift the soft limit to the hard one,
// so that thousands of idle clients exhaust neither accept() nor the engine.
void raise_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

struct Server::Impl {
  explicit Impl(Options o) : ioc(std::max(1, o.n_io_threads)), acceptor(net::make_strand(ioc)) {
    state = std::make_shared<ServerState>();
    state->options = std::move(o);
    state->error_body = plain_error;
  }

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        auto conn = std::make_shared<Connection>(std::move(socket), state);
        {
          std::lock_guard<std::mutex> lock(state->connections_mu);
          state->connections[conn.get()] = conn;
        }
        conn->start();
      } else if (ec == net::error::no_descriptors) {
        // Out of file descriptors: back off a little instead of spinning.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      accept();
    });
  }

  std::vector<std::shared_ptr<Connection>> snapshot() {
    std::lock_guard<std::mutex> lock(state->connections_mu);
    std::vector<std::shared_ptr<Connection>> out;
    out.reserve(state->connections.size());
    for (auto& [_, c] : state->connections) out.push_back(c);
    return out;
  }

  std::shared_ptr<ServerState> state;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::unique_ptr<net::thread_pool> workers;
  std::vector<std::thread> threads;
  int port = 0;
  bool started = false, stopped = false;
};

Server::Server(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { stop(); }

void Server::route(const std::string& method, const std::string& path, Handler handler) {
  SEAM_CHECK(!impl_->started, "http: routes are added before start()");
  impl_->state->router.add(method, path, std::move(handler));
}

void Server::set_error_body(ErrorBody error_body) {
  SEAM_CHECK(!impl_->started, "http: the error body is set before start()");
  impl_->state->error_body = std::move(error_body);
}

void Server::start() {
  const Options& o = impl_->state->options;
  SEAM_CHECK(o.n_io_threads >= 1, "--http-threads must be >= 1, got ", o.n_io_threads);
  SEAM_CHECK(o.n_worker_threads >= 1, "http: n_worker_threads must be >= 1, got ", o.n_worker_threads);
  SEAM_CHECK(o.port >= 0 && o.port <= 65535, "--port must be in [0, 65535], got ", o.port);
  SEAM_CHECK(o.listen_backlog >= 1, "--listen-backlog must be >= 1, got ", o.listen_backlog);
  SEAM_CHECK(o.header_timeout_s > 0 && o.body_timeout_s > 0 && o.keep_alive_timeout_s > 0 && o.write_timeout_s > 0,
             "HTTP timeouts must be > 0");
  SEAM_CHECK(!impl_->started, "http: start() called twice");
  raise_fd_limit();
  boost::system::error_code ec;
  const auto address = net::ip::make_address(o.host, ec);
  SEAM_CHECK(!ec, "cannot listen on '", o.host, "': not an IP address");
  const tcp::endpoint ep(address, uint16_t(o.port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);  // restart without waiting out TIME_WAIT
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(o.listen_backlog, ec);
  if (ec) {
    a.close();
    throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + ec.message());
  }
  impl_->port = a.local_endpoint().port();
  impl_->started = true;
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->workers = std::make_unique<net::thread_pool>(size_t(o.n_worker_threads));
  net::post(a.get_executor(), [impl = impl_.get()] { impl->accept(); });
  for (int i = 0; i < o.n_io_threads; ++i) impl_->threads.emplace_back([impl = impl_.get()] { impl->ioc.run(); });
}

int Server::port() const { return impl_->port; }

void Server::post_work(std::function<void()> fn) {
  std::shared_lock<std::shared_mutex> lock(impl_->state->post_mu);
  if (!impl_->state->alive || !impl_->workers) return;
  net::post(*impl_->workers, std::move(fn));
}

void Server::stop_accepting() {
  if (!impl_->started) return;
  std::promise<void> done;
  auto f = done.get_future();
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get(), &done] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    done.set_value();
  });
  if (!impl_->stopped) f.wait();
}

void Server::close_idle_connections() {
  impl_->state->draining.store(true);
  for (auto& c : impl_->snapshot()) c->drain();
}

size_t Server::n_active_requests() const { return size_t(impl_->state->n_active.load()); }

size_t Server::n_connections() const {
  std::lock_guard<std::mutex> lock(impl_->state->connections_mu);
  return impl_->state->connections.size();
}

void Server::stop() {
  Impl& s = *impl_;
  if (!s.started || s.stopped) return;
  stop_accepting();
  s.state->draining.store(true);
  for (auto& c : s.snapshot()) c->close_now();
  // Let the closes run (each cancels its running request) for a moment.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (n_connections() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  {
    std::unique_lock<std::shared_mutex> lock(s.state->post_mu);
    s.state->alive = false;  // responders post nothing from here on
  }
  s.stopped = true;
  s.work.reset();
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
  // Work in progress finishes (its replies go nowhere); work not started is dropped.
  s.workers->stop();
  s.workers->join();
  // Connections still registered die here, while their io_context exists.
  std::unordered_map<Connection*, std::shared_ptr<Connection>> left;
  {
    std::lock_guard<std::mutex> lock(s.state->connections_mu);
    left.swap(s.state->connections);
  }
  left.clear();
}

}  // namespace seam::http
