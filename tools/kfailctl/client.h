#pragma once

// A blocking HTTP/1.1 client for kfaild's API, for kfailctl: one request per connection, a
// deadline on each, over http:// or https://. Over https:// it speaks TLS 1.2 or newer, verifies
// the server's certificate against the CA file given (the system's CAs without one) and against
// the URL's host (IP address or name), and presents a client certificate when given one.
//
// Not thread-safe; one Client per thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "server/common/result.h"

namespace boost::asio::ssl {
class context;
}

namespace kfaild::ctl {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "8080";
  bool tls = false;  // https://
};

// "http://host:port" or "https://host:port" (a trailing slash is allowed; no path; the port
// defaults to 80 and 443). Fails with a message saying why.
Result<Endpoint> parseUrl(const std::string& url);

// PEM files for https://. cert_file and key_file: both or neither.
struct TlsFiles {
  std::string ca_file;  // empty: the system's CAs
  std::string cert_file;
  std::string key_file;
  bool empty() const { return ca_file.empty() && cert_file.empty() && key_file.empty(); }
};

struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;
};

class Client {
 public:
  // Reads the TLS files (https:// only: files with an http:// endpoint are a mistake). Errors
  // name the option and the file: "--ca-file /x: cannot use it: no start line".
  static Result<Client> create(Endpoint endpoint, std::string token,
                               std::chrono::milliseconds timeout, const TlsFiles& tls = {});

  // Sends `body` as application/json when not empty, and the bearer token when set. Errors:
  // a message for the operator, one line; a TLS failure begins with "TLS: " and says what to do
  // ("... pass --ca-file with the CA that signed the server's certificate").
  Result<Reply> call(const std::string& method, const std::string& target,
                     const std::string& body = "");

 private:
  Client(Endpoint endpoint, std::string token, std::chrono::milliseconds timeout,
         std::shared_ptr<boost::asio::ssl::context> tls);
  std::string url() const;

  Endpoint endpoint_;
  std::string token_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // set for https://
  bool has_ca_file_ = false;                        // --ca-file given, not the system's CAs
};

}  // namespace kfaild::ctl
