#include "http/connection.h"

#include <array>
#include <chrono>
#include <cstdio>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>

namespace seam::http {

namespace bhttp = boost::beast::http;
using boost::system::error_code;

// The reply side of one request. Holds the connection weakly: a responder kept
// by an engine callback must not keep a closed connection (and its socket) alive
// past the io_context; every call is posted to the strand and checked against
// the request it was made for.
class ConnectionResponder : public Responder, public std::enable_shared_from_this<ConnectionResponder> {
 public:
  ConnectionResponder(std::weak_ptr<Connection> conn, std::shared_ptr<ServerState> state, uint64_t seq)
      : conn_(std::move(conn)), state_(std::move(state)), seq_(seq) {}

  void send(Response r) override {
    run([seq = seq_, r = std::move(r)](Connection& c) mutable { c.reply(seq, std::move(r)); });
  }
  void start_stream(int status, std::string content_type, std::vector<Header> headers) override {
    run([=, seq = seq_](Connection& c) { c.reply_stream(seq, status, content_type, headers); });
  }
  void write(std::string data) override {
    run([seq = seq_, d = std::move(data)](Connection& c) { c.reply_write(seq, d); });
  }
  void finish() override {
    run([seq = seq_](Connection& c) { c.reply_finish(seq); });
  }
  void set_on_cancel(std::function<void()> fn) override {
    auto shared = std::make_shared<std::function<void()>>(std::move(fn));
    const bool posted = run([self = shared_from_this(), shared](Connection&) {
      if (self->cancelled_.load()) {
        (*shared)();
      } else {
        self->on_cancel_ = std::move(*shared);
      }
    });
    // The connection is gone: whatever it was for is cancelled.
    if (!posted) (*shared)();
  }
  bool cancelled() const override { return cancelled_.load(); }
  void post(std::function<void()> fn) override {
    run([fn = std::move(fn)](Connection&) { fn(); });
  }

  // On the strand.
  void cancel() {
    if (cancelled_.exchange(true)) return;
    if (auto fn = std::move(on_cancel_)) {
      on_cancel_ = nullptr;
      fn();
    }
  }

 private:
  // Posts `fn` to the connection's strand; false when the connection or the
  // server is gone. Under post_mu, so the server cannot stop in between.
  template <typename Fn>
  bool run(Fn fn) {
    std::shared_lock<std::shared_mutex> lock(state_->post_mu);
    if (!state_->alive) return false;
    auto conn = conn_.lock();
    if (!conn) return false;
    auto ex = conn->socket_.get_executor();
    net::post(ex, [conn = std::move(conn), fn = std::move(fn)]() mutable { fn(*conn); });
    return true;
  }

  std::weak_ptr<Connection> conn_;
  std::shared_ptr<ServerState> state_;
  const uint64_t seq_;
  std::atomic<bool> cancelled_{false};
  std::function<void()> on_cancel_;  // strand only
};

Connection::Connection(tcp::socket socket, std::shared_ptr<ServerState> state)
    : socket_(std::move(socket)),
      state_(std::move(state)),
      deadline_(socket_.get_executor()),
      write_deadline_(socket_.get_executor()) {
  error_code ec;
  const auto ep = socket_.remote_endpoint(ec);
  if (!ec) remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  socket_.set_option(tcp::no_delay(true), ec);  // stream chunks leave at once
}

Connection::~Connection() = default;

void Connection::start() {
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->start_request(); });
}

void Connection::drain() {
  net::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ != Phase::handling) self->close();
    // A running request closes after its reply (response_done sees draining).
  });
}

void Connection::close_now() {
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
}

void Connection::set_deadline(double seconds) {
  const uint64_t gen = ++deadline_gen_;
  deadline_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds)));
  deadline_.async_wait([self = shared_from_this(), gen](error_code ec) {
    if (ec || gen != self->deadline_gen_) return;
    self->on_deadline();
  });
}

void Connection::clear_deadline() {
  ++deadline_gen_;
  deadline_.cancel();
}

void Connection::on_deadline() {
  switch (phase_) {
    case Phase::idle:
      // Part of a header is here (the parser waits for all of it): too slow.
      if (buffer_.size() > 0) return fail(408, "the request header was not complete in time");
      close();  // keep-alive idle, or a connection that never sent a byte
      break;
    case Phase::header:
      fail(408, "the request header was not complete within " +
                    std::to_string(int(state_->options.header_timeout_s)) + " s");
      break;
    case Phase::body:
      fail(408, "the request body was not complete within " + std::to_string(int(state_->options.body_timeout_s)) +
                    " s; the request was not run");
      break;
    case Phase::closing:  // the lingering close ran out of time
      close();
      break;
    default:
      break;
  }
}

void Connection::start_request() {
  if (phase_ == Phase::closing || phase_ == Phase::closed) return;
  if (state_->draining.load()) return close();
  parser_.emplace();
  parser_->header_limit(uint32_t(state_->options.max_header_bytes));
  parser_->body_limit(state_->options.max_body_bytes);
  if (buffer_.size() > 0) {
    phase_ = Phase::header;
    set_deadline(state_->options.header_timeout_s);
    // A pipelined request is already here: the watch read (if still pending)
    // would wait for bytes that may never come. Its abort resumes the parse.
    if (read_pending_) {
      error_code ignored;
      socket_.cancel(ignored);
      return;
    }
  } else {
    // Idle: a plain read waits for the first byte, which starts the header deadline.
    phase_ = Phase::idle;
    set_deadline(first_request_ ? state_->options.header_timeout_s : state_->options.keep_alive_timeout_s);
    raw_read();
    return;
  }
  read_request();
}

void Connection::read_request() {
  if (read_pending_) return;  // the watch read's completion continues here
  read_pending_ = true;
  bhttp::async_read_some(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) {
    self->read_pending_ = false;
    self->on_read(ec);
  });
}

void Connection::on_read(error_code ec) {
  if (phase_ == Phase::closing) return ec ? close() : drain_read();
  if (phase_ == Phase::closed) return;
  if (ec == bhttp::error::end_of_stream) return close();  // closed between requests
  if (ec == bhttp::error::header_limit)
    return fail(431, "the request header is over " + std::to_string(state_->options.max_header_bytes) + " bytes");
  if (ec == bhttp::error::body_limit)
    return fail(413, "the request body is over " + std::to_string(state_->options.max_body_bytes) + " bytes");
  if (ec == bhttp::error::partial_message || ec == net::error::eof || ec == net::error::connection_reset ||
      ec == net::error::operation_aborted)
    return close();  // the client went away mid-request: nothing runs
  if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category())
    return fail(400, "malformed HTTP request (" + ec.message() + ")");
  if (ec) return close();

  if (phase_ == Phase::header && parser_->is_header_done()) {
    if (!on_header_done()) return;
    phase_ = Phase::body;
    set_deadline(state_->options.body_timeout_s);
  }
  if (parser_->is_done()) {
    clear_deadline();
    return dispatch();
  }
  read_request();
}

// Checks the header as soon as it is complete, before any body byte is read.
bool Connection::on_header_done() {
  const auto& h = parser_->get();
  size_t n_fields = 0;
  for (auto it = h.begin(); it != h.end(); ++it) ++n_fields;
  if (n_fields > state_->options.max_header_count) {
    fail(431, "the request has " + std::to_string(n_fields) + " header fields; the limit is " +
                  std::to_string(state_->options.max_header_count));
    return false;
  }
  const bool has_te = h.find(bhttp::field::transfer_encoding) != h.end();
  if (has_te && !parser_->chunked()) {
    fail(400, "the only transfer coding accepted is chunked");
    return false;
  }
  const auto method = h.method();
  const bool needs_body = method == bhttp::verb::post || method == bhttp::verb::put || method == bhttp::verb::patch;
  if (needs_body && !parser_->chunked() && !parser_->content_length()) {
    fail(411, "a request body needs a Content-Length (or chunked transfer coding)");
    return false;
  }
  // A client that waits for "100 Continue" before the body gets it now.
  auto expect = h.find(bhttp::field::expect);
  if (expect != h.end() && iequals(std::string(expect->value()), "100-continue") && h.version() >= 11 &&
      !parser_->is_done())
    queue("HTTP/1.1 100 Continue\r\n\r\n");
  return true;
}

void Connection::dispatch() {
  auto msg = parser_->release();
  parser_.reset();
  first_request_ = false;
  phase_ = Phase::handling;
  ++seq_;
  version_ = msg.version() == 10 ? 10 : 11;
  keep_alive_ = msg.keep_alive() && !state_->draining.load();
  replied_ = chunked_ = complete_ = close_after_ = false;
  active_ = std::make_shared<ConnectionResponder>(weak_from_this(), state_, seq_);
  state_->n_active.fetch_add(1);

  Request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.path = req.target.substr(0, req.target.find('?'));
  req.version = version_;
  req.remote = remote_;
  for (const auto& f : msg) req.headers.push_back(Header{std::string(f.name_string()), std::string(f.value())});
  req.body = std::move(msg.body());

  const Router::Match m = state_->router.find(req.method, req.path);
  if (!m.handler) {
    std::vector<Header> headers;
    if (m.status == 405) headers.push_back({"Allow", m.allow});
    Response r = state_->error_body(m.status, m.status == 404 ? "no route " + req.method + " " + req.path
                                                              : "method " + req.method + " is not allowed on " +
                                                                    req.path + " (allowed: " + m.allow + ")");
    r.headers.insert(r.headers.end(), headers.begin(), headers.end());
    reply(seq_, std::move(r));
  } else {
    const std::shared_ptr<Responder> responder = active_;
    try {
      (*m.handler)(req, responder);
    } catch (const std::exception& e) {
      reply(seq_, state_->error_body(500, "internal error"));
    } catch (...) {
      reply(seq_, state_->error_body(500, "internal error"));
    }
  }
  if (phase_ == Phase::handling) watch_peer();
}

// While a request runs: a read that sees the client go away (EOF or error)
// cancels it. Data (a pipelined request) stays in the buffer; beyond a header's
// worth the watch pauses until the reply is done (TCP holds the rest).
void Connection::watch_peer() {
  if (read_pending_ || peer_gone_ || phase_ != Phase::handling) return;
  if (buffer_.size() >= state_->options.max_header_bytes + 65536) return;
  raw_read();
}

// A read into the buffer, not parsed: the client's first byte when idle, or its
// going away while a request runs. on_watch() decides what the bytes mean.
void Connection::raw_read() {
  if (read_pending_) return;
  read_pending_ = true;
  socket_.async_read_some(buffer_.prepare(16384), [self = shared_from_this()](error_code ec, size_t n) {
    self->read_pending_ = false;
    self->on_watch(ec, n);
  });
}

void Connection::on_watch(error_code ec, size_t n) {
  if (phase_ == Phase::closing) return ec ? close() : drain_read();
  if (phase_ == Phase::closed) return;
  if (!ec) buffer_.commit(n);
  if (phase_ == Phase::handling) {
    if (ec) {
      peer_gone_ = true;
      keep_alive_ = false;
      cancel_active();
      if (ec != net::error::eof) close();
      return;
    }
    watch_peer();
    return;
  }
  // Idle, or the reply finished while this read was pending: on to the next request.
  if (ec && ec != net::error::eof && ec != net::error::operation_aborted) return close();
  if (ec == net::error::eof && buffer_.size() == 0) return close();
  if (phase_ == Phase::idle) {
    if (buffer_.size() == 0) return raw_read();
    phase_ = Phase::header;  // the first byte: the whole header is due within the header deadline
    set_deadline(state_->options.header_timeout_s);
  }
  read_request();
}

std::string Connection::head(int status, const std::string& content_type, const std::vector<Header>& headers,
                             const std::string& framing) {
  if (state_->draining.load()) keep_alive_ = false;  // shutting down: this is the last reply
  std::string h = version_ == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  h += std::to_string(status) + " " + std::string(bhttp::obsolete_reason(bhttp::int_to_status(unsigned(status)))) +
       "\r\n";
  if (!content_type.empty()) h += "Content-Type: " + content_type + "\r\n";
  for (const Header& x : headers) h += x.name + ": " + x.value + "\r\n";
  h += framing;
  if (!keep_alive_) {
    h += "Connection: close\r\n";
  } else if (version_ == 10) {
    h += "Connection: keep-alive\r\n";
  }
  return h + "\r\n";
}

void Connection::fail(int status, const std::string& message, std::vector<Header> headers) {
  clear_deadline();
  if (phase_ != Phase::handling) {
    // Not a dispatched request: answer as HTTP/1.1 (or as the parser saw it).
    version_ = parser_ && parser_->is_header_done() && parser_->get().version() == 10 ? 10 : 11;
  }
  keep_alive_ = false;
  phase_ = Phase::closing;
  Response r = state_->error_body(status, message);
  r.headers.insert(r.headers.end(), headers.begin(), headers.end());
  queue(head(r.status, r.content_type, r.headers, "Content-Length: " + std::to_string(r.body.size()) + "\r\n") +
        r.body);
  close_after_ = true;
  if (!writing_) lingering_close();
}

void Connection::reply(uint64_t seq, Response r) {
  if (seq != seq_ || phase_ != Phase::handling || replied_) return;
  replied_ = complete_ = true;
  queue(head(r.status, r.content_type, r.headers, "Content-Length: " + std::to_string(r.body.size()) + "\r\n") +
        r.body);
  if (!writing_) response_done();
}

void Connection::reply_stream(uint64_t seq, int status, const std::string& content_type,
                              const std::vector<Header>& headers) {
  if (seq != seq_ || phase_ != Phase::handling || replied_) return;
  replied_ = true;
  chunked_ = version_ == 11;
  if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the close ends the body
  queue(head(status, content_type, headers, chunked_ ? "Transfer-Encoding: chunked\r\n" : ""));
}

void Connection::reply_write(uint64_t seq, const std::string& data) {
  if (seq != seq_ || phase_ != Phase::handling || !replied_ || complete_ || data.empty()) return;
  if (!chunked_) return queue(data);
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  queue(size + data + "\r\n");
}

void Connection::reply_finish(uint64_t seq) {
  if (seq != seq_ || phase_ != Phase::handling || !replied_ || complete_) return;
  complete_ = true;
  if (chunked_) queue("0\r\n\r\n");
  if (!writing_) response_done();
}

void Connection::queue(std::string bytes) {
  out_pending_ += bytes;
  if (!writing_) flush();
}

void Connection::flush() {
  if (writing_ || out_pending_.empty() || phase_ == Phase::closed) return;
  writing_ = true;
  out_writing_.swap(out_pending_);
  out_pending_.clear();
  const uint64_t gen = ++write_gen_;
  write_deadline_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(state_->options.write_timeout_s)));
  write_deadline_.async_wait([self = shared_from_this(), gen](error_code ec) {
    if (ec || gen != self->write_gen_) return;
    self->cancel_active();  // a client that stopped reading is gone
    self->close();
  });
  net::async_write(socket_, net::buffer(out_writing_),
                   [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); });
}

void Connection::on_written(error_code ec) {
  writing_ = false;
  ++write_gen_;
  write_deadline_.cancel();
  out_writing_.clear();
  if (phase_ == Phase::closed) return;
  if (ec) {
    peer_gone_ = true;
    cancel_active();
    return close();
  }
  if (!out_pending_.empty()) return flush();
  if (close_after_) return lingering_close();
  if (phase_ == Phase::handling && complete_) response_done();
}

void Connection::response_done() {
  active_.reset();
  state_->n_active.fetch_sub(1);
  phase_ = Phase::idle;
  if (!keep_alive_ || peer_gone_ || state_->draining.load()) {
    close_after_ = true;
    phase_ = Phase::closing;
    return lingering_close();
  }
  start_request();
}

void Connection::cancel_active() {
  if (active_) active_->cancel();
}

// After the last reply: send FIN, then read and drop what the client still
// sends for a moment, so that its unread request bytes do not turn our close
// into a reset that destroys the reply before the client reads it.
void Connection::lingering_close() {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closing;
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  const uint64_t gen = ++deadline_gen_;
  deadline_.expires_after(std::chrono::seconds(2));
  deadline_.async_wait([self = shared_from_this(), gen](error_code ec) {
    if (ec || gen != self->deadline_gen_) return;
    self->close();
  });
  drain_read();
}

// Reads and drops bytes until EOF, an error or the lingering deadline.
void Connection::drain_read() {
  if (read_pending_ || phase_ != Phase::closing) return;
  read_pending_ = true;
  auto drop = std::make_shared<std::array<char, 4096>>();
  socket_.async_read_some(net::buffer(*drop), [self = shared_from_this(), drop](error_code ec, size_t) {
    self->read_pending_ = false;
    if (ec) return self->close();
    self->drain_read();
  });
}

void Connection::close() {
  if (phase_ == Phase::closed) return;
  const bool running = active_ != nullptr;
  phase_ = Phase::closed;
  clear_deadline();
  ++write_gen_;
  write_deadline_.cancel();
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  cancel_active();
  if (running) {
    active_.reset();
    state_->n_active.fetch_sub(1);
  }
  std::lock_guard<std::mutex> lock(state_->connections_mu);
  state_->connections.erase(this);  // may drop the last owner: nothing after this line
}

}  // namespace seam::http
