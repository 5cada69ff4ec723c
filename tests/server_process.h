// ServerProcess: runs `seam serve --device cpu` on stories260K as a real child
// process on a free port (--port 0; the port is read from its log) and waits
// for GET /health. The server tests talk to it over HTTP.
#pragma once
#include <chrono>
#include <csignal>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include "test_util.h"

namespace seam::test {

class ServerProcess {
 public:
  // Throws std::runtime_error (with the server log) when it does not come up.
  explicit ServerProcess(const std::vector<std::string>& extra_args = {}, double timeout_s = 120) {
    std::signal(SIGPIPE, SIG_IGN);
    log_path_ = make_temp_dir("serve") + "/serve.log";
    std::vector<std::string> args = {SEAM_BINARY, "serve", "--model-path", stories_dir(), "--device", "cpu",
                                     "--port", "0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (pid_ < 0) throw std::runtime_error("fork failed");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (exited()) throw std::runtime_error("seam serve exited early; log:\n" + log());
      if (port_ == 0) {
        std::smatch m;
        const std::string text = log();
        if (std::regex_search(text, m, std::regex("listening on http://[^:]+:([0-9]+)"))) port_ = std::stoi(m[1]);
      }
      if (port_ != 0) {
        httplib::Client cli("127.0.0.1", port_);
        cli.set_connection_timeout(1, 0);
        auto res = cli.Get("/health");
        if (res && res->status == 200) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    stop();
    throw std::runtime_error("seam serve did not become healthy; log:\n" + log());
  }
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const { return read_file(log_path_); }

  // SIGTERM, then SIGKILL after 20 s; returns the exit status (-1 when killed).
  int stop() {
    if (pid_ <= 0) return status_;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 400; ++i) {
      if (exited()) return status_;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    status_ = -1;
    return status_;
  }

 private:
  bool exited() {
    if (pid_ <= 0) return true;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      pid_ = -1;
      return true;
    }
    return false;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  int status_ = -1;
  std::string log_path_;
};

}  // namespace seam::test
