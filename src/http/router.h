// http::Router: handlers by (method, exact path). A path it knows with a
// method it does not is 405 with the Allow header; a path it does not know is 404.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "http/message.h"
#include "http/responder.h"

namespace seam::http {

// Runs on an io thread: must not block (answer later through the Responder).
using Handler = std::function<void(Request& request, const std::shared_ptr<Responder>& responder)>;

class Router {
 public:
  void add(const std::string& method, const std::string& path, Handler handler);

  struct Match {
    const Handler* handler = nullptr;  // null: `status` says why
    int status = 200;                  // 404 or 405 when no handler
    std::string allow;                 // 405: the methods the path takes ("GET, POST")
  };
  Match find(const std::string& method, const std::string& path) const;

 private:
  std::map<std::string, std::map<std::string, Handler>> routes_;  // path -> method -> handler
};

}  // namespace seam::http
