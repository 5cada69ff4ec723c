// HttpClient: a small blocking HTTP/1.1 client (one request per connection)
// over a plain socket, with Beast's parser reading the reply. Used by
// `seam bench-serving` and by the tests; every wait is bounded by a timeout.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace seam {

struct HttpReply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // empty when a body callback took it
  std::string get_header_value(const std::string& name) const;  // "" when absent
};

// A reply, or the transport error that prevented one.
class HttpResult {
 public:
  HttpResult() = default;
  explicit HttpResult(std::string error) : error_(std::move(error)) {}
  explicit HttpResult(HttpReply reply) : reply_(std::move(reply)) {}
  explicit operator bool() const { return error_.empty(); }
  const HttpReply* operator->() const { return &reply_; }
  const HttpReply& operator*() const { return reply_; }
  const std::string& error() const { return error_; }

 private:
  HttpReply reply_;
  std::string error_;
};

class HttpClient {
 public:
  HttpClient(std::string host, int port) : host_(std::move(host)), port_(port) {}
  void set_connection_timeout(long sec, long usec = 0) { connect_timeout_s_ = double(sec) + double(usec) * 1e-6; }
  void set_read_timeout(long sec, long usec = 0) { read_timeout_s_ = double(sec) + double(usec) * 1e-6; }
  void set_header(const std::string& name, const std::string& value) { headers_.emplace_back(name, value); }

  HttpResult Get(const std::string& path) { return send("GET", path, "", ""); }
  HttpResult Post(const std::string& path, const std::string& body, const std::string& content_type) {
    return send("POST", path, body, content_type);
  }
  // `on_body` gets the body as it arrives once the status and headers are in
  // (`reply` has them); returning false closes the connection (walking away).
  using BodyCallback = std::function<bool(const HttpReply& reply, const char* data, size_t n)>;
  HttpResult send(const std::string& method, const std::string& path, const std::string& body,
                  const std::string& content_type, const BodyCallback& on_body = nullptr);

 private:
  std::string host_;
  int port_;
  double connect_timeout_s_ = 10;
  double read_timeout_s_ = 300;  // each wait for bytes
  std::vector<std::pair<std::string, std::string>> headers_;
};

}  // namespace seam
