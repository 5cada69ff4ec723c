// RawSocket: a TCP client with nothing HTTP about it, for the tests that play
// hostile or broken clients (slow headers, half bodies, pipelining, floods of
// idle connections). Every wait has a timeout; only 127.0.0.1.
#pragma once
#include <chrono>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace seam::test {

class RawSocket {
 public:
  explicit RawSocket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) {
      int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  }
  ~RawSocket() { close(); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  RawSocket(RawSocket&& o) noexcept : fd_(o.fd_), eof_(o.eof_) { o.fd_ = -1; }

  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes with a reset (SO_LINGER 0), as a client killed mid-request.
  void reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

  bool send(const std::string& data) {
    size_t off = 0;
    while (fd_ >= 0 && off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += size_t(n);
    }
    return fd_ >= 0;
  }

  // Reads what arrives within `timeout_s` (returns early once `until` is in
  // what was read, or at EOF). eof() says whether the peer closed.
  std::string read(double timeout_s, const std::string& until = "") {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (fd_ >= 0 && !eof_) {
      const auto left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, int(left * 1000) + 1) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      out.append(buf, size_t(n));
      if (!until.empty() && out.find(until) != std::string::npos) break;
    }
    return out;
  }
  // Reads until the peer closes (or `timeout_s`).
  std::string read_to_eof(double timeout_s) { return read(timeout_s); }
  bool eof() const { return eof_; }

  // Whether the peer closed within `timeout_s` (any bytes before are dropped).
  bool closed_within(double timeout_s) {
    read(timeout_s);
    return eof_;
  }

 private:
  int fd_ = -1;
  bool eof_ = false;
};

// The number of times `needle` occurs in `hay`.
inline size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

}  // namespace seam::test
