// http::Request and http::Response: one parsed request and one whole reply,
// plain values with no Boost type in sight (the server layer includes these).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace seam::http {

struct Header {
  std::string name;  // as sent; compared case-insensitively
  std::string value;
};

// ASCII case-insensitive equality (header names, media types).
bool iequals(const std::string& a, const std::string& b);

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // target without the query
  int version = 11;    // 10 or 11
  std::vector<Header> headers;
  std::string body;
  std::string remote;  // peer address, for logs

  // The first header named `name` (case-insensitive); empty when absent.
  std::string header(const std::string& name) const;
  bool has_header(const std::string& name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<Header> headers;  // extra headers (Content-Length/Connection are the server's)
  std::string body;

  Response() = default;
  Response(int s, std::string ct, std::string b) : status(s), content_type(std::move(ct)), body(std::move(b)) {}
};

}  // namespace seam::http
