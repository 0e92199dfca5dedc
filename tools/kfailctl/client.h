#pragma once

// A blocking HTTP/1.1 client for kfaild's API, for kfailctl: one request per connection, a
// deadline on each, plain http:// only (kfaild serves no TLS; put a proxy in front for that).
//
// Not thread-safe; one Client per thread.

#include <chrono>
#include <cstdint>
#include <string>

#include "server/common/result.h"

namespace kfaild::ctl {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "8080";
};

// "http://host:port" (a trailing slash is allowed; no path). Fails with a message saying why.
Result<Endpoint> parseUrl(const std::string& url);

struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;
};

class Client {
 public:
  Client(Endpoint endpoint, std::string token, std::chrono::milliseconds timeout);

  // Sends `body` as application/json when not empty, and the bearer token when set.
  Result<Reply> call(const std::string& method, const std::string& target, const std::string& body = "");

 private:
  Endpoint endpoint_;
  std::string token_;
  std::chrono::milliseconds timeout_;
};

}  // namespace kfaild::ctl
