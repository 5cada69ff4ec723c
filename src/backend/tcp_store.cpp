#include "backend/tcp_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace seam {

namespace {
// Wire format, both ways: [op u8][key length u32][key][value length u64][value].
// Ops: 's' set, 'd' delete, 'g' get (the server answers when the key exists, or 't' on its timeout
// given as the value, in milliseconds), 'a' add (value: decimal delta; answer: the sum).
bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= size_t(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::recv(fd, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // closed, or SO_RCVTIMEO expired
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool write_msg(int fd, char op, const std::string& key, const std::string& value) {
  const uint32_t kl = uint32_t(key.size());
  const uint64_t vl = value.size();
  return write_all(fd, &op, 1) && write_all(fd, &kl, 4) && write_all(fd, key.data(), kl) && write_all(fd, &vl, 8) &&
         write_all(fd, value.data(), vl);
}

bool read_msg(int fd, char& op, std::string& key, std::string& value) {
  uint32_t kl = 0;
  uint64_t vl = 0;
  if (!read_all(fd, &op, 1) || !read_all(fd, &kl, 4)) return false;
  if (kl > (1u << 20)) return false;  // not our protocol
  key.resize(kl);
  if (!read_all(fd, key.data(), kl) || !read_all(fd, &vl, 8)) return false;
  if (vl > (uint64_t(1) << 32)) return false;
  value.resize(vl);
  return read_all(fd, value.data(), vl);
}

sockaddr_in resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  SEAM_CHECK(rc == 0 && res, "--dist-init-addr: cannot resolve host '", host, "': ", gai_strerror(rc));
  sockaddr_in a = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  ::freeaddrinfo(res);
  a.sin_port = htons(uint16_t(port));
  return a;
}
}  // namespace

void parse_host_port(const std::string& addr, std::string& host, int& port, const std::string& flag) {
  const size_t colon = addr.rfind(':');
  SEAM_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < addr.size(), flag, ": '", addr,
             "' is not HOST:PORT");
  host = addr.substr(0, colon);
  const std::string p = addr.substr(colon + 1);
  SEAM_CHECK(p.find_first_not_of("0123456789") == std::string::npos && p.size() <= 5, flag, ": port '", p,
             "' is not a number");
  port = std::stoi(p);
  SEAM_CHECK(port > 0 && port < 65536, flag, ": port ", port, " is outside 1..65535");
}

// ------------------------------------------------------------------------------ server

TcpStoreServer::TcpStoreServer(const std::string& host, int port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  SEAM_CHECK(listen_fd_ >= 0, "tcp store: socket(): ", std::strerror(errno));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = resolve(host, port);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listen_fd_);
    throw Error(detail::concat("tcp store: cannot listen on ", host, ":", port, ": ", why));
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes the readers
  }
  cv_.notify_all();
  for (std::thread& t : clients_) t.join();
  for (int fd : client_fds_) ::close(fd);
}

void TcpStoreServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      ::close(fd);
      break;
    }
    client_fds_.push_back(fd);
    clients_.emplace_back([this, fd] { serve(fd); });
  }
}

void TcpStoreServer::serve(int fd) {
  char op = 0;
  std::string key, value;
  while (!stop_ && read_msg(fd, op, key, value)) {
    std::unique_lock<std::mutex> lock(mu_);
    if (op == 's') {
      data_[key] = value;
      cv_.notify_all();
      lock.unlock();
      if (!write_msg(fd, 'o', "", "")) break;
    } else if (op == 'a') {
      int64_t v = data_.count(key) ? std::stoll(data_[key]) : 0;
      v += std::stoll(value);
      data_[key] = std::to_string(v);
      cv_.notify_all();
      lock.unlock();
      if (!write_msg(fd, 'o', "", std::to_string(v))) break;
    } else if (op == 'd') {
      data_.erase(key);
      lock.unlock();
      if (!write_msg(fd, 'o', "", "")) break;
    } else if (op == 'g') {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stoll(value));
      const bool found = cv_.wait_until(lock, deadline, [&] { return stop_ || data_.count(key) > 0; }) && !stop_;
      const std::string answer = found ? data_[key] : std::string();
      lock.unlock();
      if (!write_msg(fd, found ? 'o' : 't', "", answer)) break;
    } else {
      break;  // not our protocol: drop the connection
    }
  }
}

// ------------------------------------------------------------------------------ client

TcpStore::TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  const sockaddr_in a = resolve(host, port);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last_error;
  while (true) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    SEAM_CHECK(fd_ >= 0, "tcp store: socket(): ", std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) break;
    last_error = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error(detail::concat("cannot reach the tensor-parallel store at ", address(), " within ",
                                 timeout.count(), " ms (", last_error, "): is node 0 started?"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A reply never takes longer than the server's own wait plus slack: a silent peer is an error.
  timeval tv{};
  const auto ms = timeout.count() + 5000;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TcpStore::request(char op, const std::string& key, const std::string& value, bool* timed_out) {
  std::lock_guard<std::mutex> lock(mu_);
  char answer = 0;
  std::string k, v;
  if (!write_msg(fd_, op, key, value) || !read_msg(fd_, answer, k, v))
    throw Error(detail::concat("the tensor-parallel store at ", address(),
                               " closed the connection (node 0 stopped?) during '", key, "'"));
  if (timed_out) *timed_out = answer == 't';
  if (answer == 't' && !timed_out)
    throw Error(detail::concat("timed out after ", timeout_.count(), " ms waiting for '", key,
                               "' at the tensor-parallel store ", address(), " (a rank did not arrive)"));
  return v;
}

void TcpStore::set(const std::string& key, const std::string& value) { request('s', key, value); }

std::string TcpStore::get(const std::string& key) { return request('g', key, std::to_string(timeout_.count())); }

std::optional<std::string> TcpStore::try_get(const std::string& key, std::chrono::milliseconds wait) {
  SEAM_ASSERT(wait <= timeout_, "try_get waits longer than the connection's receive timeout");
  bool timed_out = false;
  std::string v = request('g', key, std::to_string(wait.count()), &timed_out);
  if (timed_out) return std::nullopt;
  return v;
}

void TcpStore::remove(const std::string& key) { request('d', key, ""); }

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  return std::stoll(request('a', key, std::to_string(delta)));
}

}  // namespace seam
