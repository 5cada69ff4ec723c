#include "bench_serving/http_client.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace seam {

namespace bhttp = boost::beast::http;

namespace {

bool iequal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower((unsigned char)a[i]) != std::tolower((unsigned char)b[i])) return false;
  return true;
}

// Waits for `events` on `fd` up to `timeout_s`; false on timeout or error.
bool wait_fd(int fd, short events, double timeout_s) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, int(timeout_s * 1000));
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

class Socket {
 public:
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Connects with a timeout; returns an error text, empty on success.
  std::string connect(const std::string& host, int port, double timeout_s) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
      return "cannot resolve " + host;
    std::string err = "cannot connect to " + host + ":" + std::to_string(port);
    for (addrinfo* a = res; a; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd_ < 0) continue;
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
      int rc = ::connect(fd_, a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS && wait_fd(fd_, POLLOUT, timeout_s)) {
        int so = 0;
        socklen_t len = sizeof so;
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &so, &len);
        rc = so == 0 ? 0 : -1;
        if (so) errno = so;
      }
      if (rc == 0) {
        int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::freeaddrinfo(res);
        return "";
      }
      err += std::string(": ") + std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
    ::freeaddrinfo(res);
    return err;
  }
  std::string send_all(const std::string& data, double timeout_s) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += size_t(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!wait_fd(fd_, POLLOUT, timeout_s)) return "write timed out";
      } else {
        return std::string("write failed: ") + std::strerror(errno);
      }
    }
    return "";
  }
  // >0 bytes, 0 at EOF, -1 on error or timeout (`err` says which).
  ssize_t recv_some(char* buf, size_t cap, double timeout_s, std::string& err) {
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, cap, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) {
        err = std::string("read failed: ") + std::strerror(errno);
        return -1;
      }
      if (!wait_fd(fd_, POLLIN, timeout_s)) {
        err = "read timed out";
        return -1;
      }
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace

std::string HttpReply::get_header_value(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (iequal(k, name)) return v;
  return "";
}

HttpResult HttpClient::send(const std::string& method, const std::string& path, const std::string& body,
                            const std::string& content_type, const BodyCallback& on_body) {
  Socket sock;
  if (std::string err = sock.connect(host_, port_, connect_timeout_s_); !err.empty()) return HttpResult(err);
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + host_ + ":" + std::to_string(port_) +
                    "\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers_) req += k + ": " + v + "\r\n";
  if (!content_type.empty()) req += "Content-Type: " + content_type + "\r\n";
  if (method != "GET" || !body.empty()) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  if (std::string err = sock.send_all(req, read_timeout_s_); !err.empty()) return HttpResult(err);

  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.header_limit(1 << 20);
  HttpReply reply;
  std::string pending;  // received, not yet parsed
  bool headers_seen = false;
  char buf[16384];
  for (;;) {
    // Parse what is pending.
    while (!pending.empty() && !parser.is_done()) {
      boost::beast::error_code ec;
      const size_t used = parser.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) break;
      if (ec) return HttpResult("bad HTTP response: " + ec.message());
      if (used == 0) break;
    }
    if (parser.is_header_done() && !headers_seen) {
      headers_seen = true;
      reply.status = int(parser.get().result_int());
      for (const auto& f : parser.get()) reply.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    if (headers_seen && on_body) {
      // The parser appends to the body string: hand over what is there, then drop it.
      std::string& b = parser.get().body();
      if (!b.empty()) {
        if (!on_body(reply, b.data(), b.size())) return HttpResult(reply);
        b.clear();
      }
    }
    if (parser.is_done()) break;
    std::string err;
    const ssize_t n = sock.recv_some(buf, sizeof buf, read_timeout_s_, err);
    if (n < 0) return HttpResult(err);
    if (n == 0) {  // EOF: ends a close-delimited body, else the reply is cut short
      boost::beast::error_code ec;
      parser.put_eof(ec);
      if (ec) return HttpResult(headers_seen ? "connection closed mid-response" : "connection closed with no response");
      if (headers_seen && on_body && !parser.get().body().empty())
        on_body(reply, parser.get().body().data(), parser.get().body().size());
      break;
    }
    pending.append(buf, size_t(n));
  }
  if (!on_body) reply.body = std::move(parser.get().body());
  return HttpResult(std::move(reply));
}

}  // namespace seam
