// TcpStore: the rendezvous of a tensor-parallel group over TCP (--dist-init-addr HOST:PORT):
// a small key-value store that node 0 serves and every rank (on any machine) connects to. It
// carries what the collectives engines need before they exist (Gloo's pair addresses, NCCL's
// unique id) and the communicator's host collectives (start-up agreement, errors by rank).
//
// Never waits forever: a get() whose key does not appear within the timeout throws, naming
// the key; a connection the server closes (node 0's process died) throws "the store at
// HOST:PORT closed the connection". The server lives as long as its TcpStoreServer object.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace seam {

class TcpStoreServer {
 public:
  // Listens on host:port (port 0: any free port, see port()). Throws seam::Error when it cannot bind.
  TcpStoreServer(const std::string& host, int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  int port() const { return port_; }

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> data_;
  std::vector<int> client_fds_;
  std::vector<std::thread> clients_;
};

class TcpStore {
 public:
  // Connects to host:port, retrying until `timeout` (node 0 may start later than the others).
  TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits until `key` is set (at most the timeout), then returns its value.
  std::string get(const std::string& key);
  // Waits at most `wait` for `key`: its value, or nullopt when it is still unset (a closed
  // connection still throws). For a follower waiting on an idle leader.
  std::optional<std::string> try_get(const std::string& key, std::chrono::milliseconds wait);
  // Adds `delta` to the integer at `key` (0 when unset) and returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  // Forgets `key` (a no-op when unset).
  void remove(const std::string& key);
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }

 private:
  // Sends one request; the reply's value. A 't' reply throws unless `timed_out` is given.
  std::string request(char op, const std::string& key, const std::string& value, bool* timed_out = nullptr);

  std::string host_;
  int port_ = 0;
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::mutex mu_;  // one request at a time on the connection
};

// "HOST:PORT" -> host, port; throws seam::Error naming the flag on a malformed address.
void parse_host_port(const std::string& addr, std::string& host, int& port, const std::string& flag);

}  // namespace seam
