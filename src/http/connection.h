// http::Connection (internal to src/http/): one client connection, driven on
// its own strand. Phases: idle (waiting for a request) -> header -> body ->
// handling (the handler's reply is being produced and written) -> idle again
// (keep-alive) or closed. Only one read is pending at a time; while handling,
// that read only watches for the client going away (pipelined bytes it gets
// wait in the buffer for the next request).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http/options.h"
#include "http/router.h"
#include "http/server.h"

namespace seam::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

class Connection;
class ConnectionResponder;

// What connections share with the server. Responders keep it alive (they may
// outlive the server in an engine callback): `alive` goes false, under
// `post_mu`, before the io_context stops, and nothing is posted after.
struct ServerState {
  Options options;
  Router router;
  ErrorBody error_body;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> n_active{0};

  std::shared_mutex post_mu;
  bool alive = true;

  std::mutex connections_mu;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<ServerState> state);
  ~Connection();

  // Each posts to the connection's strand; callable from any thread.
  void start();
  void drain();      // close now unless a request runs; that one closes after its reply
  void close_now();  // drop, cancelling a running request

 private:
  friend class ConnectionResponder;
  enum class Phase { idle, header, body, handling, closing, closed };

  void start_request();
  void read_request();
  void on_read(boost::system::error_code ec);
  bool on_header_done();
  void dispatch();
  void watch_peer();
  void raw_read();
  void on_watch(boost::system::error_code ec, size_t n);
  void set_deadline(double seconds);
  void clear_deadline();
  void on_deadline();

  // Replies the connection makes itself, then closes.
  void fail(int status, const std::string& message, std::vector<Header> headers = {});
  std::string head(int status, const std::string& content_type, const std::vector<Header>& headers,
                   const std::string& framing);

  // The reply of the running request (from its responder, on the strand).
  void reply(uint64_t seq, Response r);
  void reply_stream(uint64_t seq, int status, const std::string& content_type, const std::vector<Header>& headers);
  void reply_write(uint64_t seq, const std::string& data);
  void reply_finish(uint64_t seq);

  void queue(std::string bytes);
  void flush();
  void on_written(boost::system::error_code ec);
  void response_done();
  void cancel_active();
  void lingering_close();
  void drain_read();
  void close();

  tcp::socket socket_;
  std::shared_ptr<ServerState> state_;
  std::string remote_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  net::steady_timer deadline_;
  net::steady_timer write_deadline_;
  uint64_t deadline_gen_ = 0, write_gen_ = 0;

  Phase phase_ = Phase::idle;
  bool first_request_ = true;
  bool read_pending_ = false;
  bool peer_gone_ = false;

  // The running request.
  uint64_t seq_ = 0;  // bumped per request; a stale responder's calls are ignored
  std::shared_ptr<ConnectionResponder> active_;
  int version_ = 11;
  bool keep_alive_ = true;
  bool replied_ = false;    // head sent (send() or start_stream())
  bool chunked_ = false;    // the stream is chunked (HTTP/1.1)
  bool complete_ = false;   // the whole reply is queued
  bool close_after_ = false;  // close once what is queued is written (an error reply)

  // Output: one write in flight; bytes queued meanwhile are coalesced.
  std::string out_pending_, out_writing_;
  bool writing_ = false;
};

}  // namespace seam::http
