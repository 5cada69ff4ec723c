// http::Options: the listener's address, its io threads, and the limits and
// deadlines every connection is held to. The defaults are what `seam serve`
// uses unless its flags say otherwise.
#pragma once
#include <cstddef>
#include <string>

namespace seam::http {

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;                  // 0: any free port (Server::port() says which)
  int n_io_threads = 2;          // threads running the one io_context; connections cost none
  int n_worker_threads = 2;      // Server::post_work(): CPU-heavy handler work off the io threads
  int listen_backlog = 4096;     // pending connections the kernel queues
  double header_timeout_s = 10;  // first byte of a request -> its last header byte (whole header);
                                 // also how long a new connection may stay silent
  double body_timeout_s = 60;    // end of the header -> last body byte (whole body)
  double keep_alive_timeout_s = 5;  // idle between requests on a kept-alive connection
  double write_timeout_s = 60;   // one pending write (a stalled reader is dropped)
  size_t max_header_bytes = 32 << 10;  // request line + headers; beyond: 431
  size_t max_header_count = 100;       // header fields; beyond: 431
  size_t max_body_bytes = size_t(64) << 20;  // checked from Content-Length before reading; beyond: 413
};

}  // namespace seam::http
