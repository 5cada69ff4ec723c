#include "http/message.h"

namespace seam::http {

namespace {
char lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }
}  // namespace

bool iequals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string Request::header(const std::string& name) const {
  for (const Header& h : headers)
    if (iequals(h.name, name)) return h.value;
  return "";
}

bool Request::has_header(const std::string& name) const {
  for (const Header& h : headers)
    if (iequals(h.name, name)) return true;
  return false;
}

}  // namespace seam::http
