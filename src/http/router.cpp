#include "http/router.h"

#include "core/error.h"

namespace seam::http {

void Router::add(const std::string& method, const std::string& path, Handler handler) {
  SEAM_CHECK(!routes_[path].count(method), "http: route ", method, " ", path, " added twice");
  routes_[path][method] = std::move(handler);
}

Router::Match Router::find(const std::string& method, const std::string& path) const {
  Match m;
  auto p = routes_.find(path);
  if (p == routes_.end()) {
    m.status = 404;
    return m;
  }
  auto h = p->second.find(method);
  if (h != p->second.end()) {
    m.handler = &h->second;
    return m;
  }
  m.status = 405;
  for (const auto& [allowed, _] : p->second) m.allow += (m.allow.empty() ? "" : ", ") + allowed;
  return m;
}

}  // namespace seam::http
