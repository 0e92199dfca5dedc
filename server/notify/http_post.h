#pragma once

// One HTTP(S) POST of a JSON body (or a DELETE without one) to a receiver, on a fresh connection,
// under one deadline (Boost.Beast; OpenSSL for https://). The receiver's certificate is verified
// against tls.ca_file (or the system's trust store) and must name the URL's host; a client
// certificate is sent when configured. Blocking: call it from the notifier's worker thread only.
//
// The answer's status is returned as is; only transport failures (invalid URL, connect, TLS,
// timeout) are errors. Thread-safe (no shared state).

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "server/common/result.h"
#include "server/config/config.h"

namespace kfaild::notify {

struct ReceiverUrl {
  bool https = false;
  std::string host;          // without brackets for IPv6
  std::string port;          // "80"/"443" when the URL gives none
  std::string target = "/";  // path and query
};

// An Alertmanager receiver's configured url without trailing slashes and without a trailing
// /api/v2/alerts: the base its API paths are appended to.
std::string alertmanagerBase(std::string url);

// http(s)://host[:port][/path][?query]; userinfo is refused (credentials belong in headers).
Result<ReceiverUrl> parseReceiverUrl(const std::string& url);

struct HttpAnswer {
  int status = 0;
  std::string body;  // at most 64 KiB are read
};

Result<HttpAnswer> postJson(const ReceiverUrl& url, const std::string& body,
                            const std::map<std::string, std::string>& headers,
                            const config::NotificationTls& tls, std::chrono::milliseconds timeout);

// DELETE of `url` without a body (an Alertmanager silence), under the same rules.
Result<HttpAnswer> deleteResource(const ReceiverUrl& url,
                                  const std::map<std::string, std::string>& headers,
                                  const config::NotificationTls& tls,
                                  std::chrono::milliseconds timeout);

}  // namespace kfaild::notify
