#include "server/notify/http_post.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "server/common/tls_verify.h"
#include "server/notify/errc.h"

namespace kfaild::notify {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace http = boost::beast::http;
using Tcp = asio::ip::tcp;

constexpr std::size_t kMaxAnswerBytes = 64 * 1024;

Error notifyError(errc code, std::string message) {
  return Error{make_error_code(code), std::move(message)};
}

std::string sslReason(const boost::system::error_code& ec, SSL* native) {
  std::string reason = ec.message();
  if (native != nullptr) {
    const long verify = SSL_get_verify_result(native);
    if (verify != X509_V_OK)
      reason += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
  }
  return reason;
}

Result<std::unique_ptr<ssl::context>> tlsContext(const config::NotificationTls& files) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  constexpr const char* kKeys[] = {"tls.ca_file ", "tls.cert_file ", "tls.key_file "};
  if (auto problem = common::makeVerifyingClient(
          context->native_handle(), {files.ca_file, files.cert_file, files.key_file})) {
    return notifyError(errc::tls_failed, kKeys[static_cast<int>(problem->key)] + problem->file +
                                             ": " + problem->message);
  }
  return context;
}

}  // namespace

std::string alertmanagerBase(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  const std::string alerts = "/api/v2/alerts";
  if (url.size() >= alerts.size() &&
      url.compare(url.size() - alerts.size(), alerts.size(), alerts) == 0) {
    url.resize(url.size() - alerts.size());
  }
  return url;
}

Result<ReceiverUrl> parseReceiverUrl(const std::string& url) {
  ReceiverUrl out;
  std::string_view rest(url);
  if (rest.rfind("https://", 0) == 0) {
    out.https = true;
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else {
    return notifyError(errc::invalid_url, "not an http:// or https:// URL");
  }
  const auto slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.target = std::string(rest.substr(slash));
    if (out.target.front() == '?') out.target.insert(0, "/");
  }
  if (authority.find('@') != std::string_view::npos) {
    return notifyError(errc::invalid_url, "credentials in the URL are not supported (use headers)");
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return notifyError(errc::invalid_url, "unclosed [ in the host");
    out.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return notifyError(errc::invalid_url, "expected :port after ]");
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return notifyError(errc::invalid_url, "no host");
  if (port.empty()) {
    out.port = out.https ? "443" : "80";
  } else {
    if (port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5) {
      return notifyError(errc::invalid_url, "port '" + std::string(port) + "' is not a number");
    }
    out.port = std::string(port);
  }
  return out;
}

namespace {
Result<HttpAnswer> sendJson(http::verb method, const ReceiverUrl& url, const std::string& body,
                            const std::map<std::string, std::string>& headers,
                            const config::NotificationTls& tls, std::chrono::milliseconds timeout);
}  // namespace

Result<HttpAnswer> postJson(const ReceiverUrl& url, const std::string& body,
                            const std::map<std::string, std::string>& headers,
                            const config::NotificationTls& tls, std::chrono::milliseconds timeout) {
  return sendJson(http::verb::post, url, body, headers, tls, timeout);
}

Result<HttpAnswer> deleteResource(const ReceiverUrl& url,
                                  const std::map<std::string, std::string>& headers,
                                  const config::NotificationTls& tls,
                                  std::chrono::milliseconds timeout) {
  return sendJson(http::verb::delete_, url, "", headers, tls, timeout);
}

namespace {

Result<HttpAnswer> sendJson(http::verb method, const ReceiverUrl& url, const std::string& body,
                            const std::map<std::string, std::string>& headers,
                            const config::NotificationTls& tls, std::chrono::milliseconds timeout) {
  std::unique_ptr<ssl::context> context;
  if (url.https) {
    auto made = tlsContext(tls);
    if (!made) return made.error();
    context = std::move(*made);
  }
  http::request<http::string_body> request{method, url.target, 11};
  const bool default_port = url.port == (url.https ? "443" : "80");
  const std::string host =
      url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  request.set(http::field::host, default_port ? host : host + ":" + url.port);
  request.set(http::field::user_agent, "kfaild");
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.set(http::field::connection, "close");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();

  asio::io_context ioc;
  Tcp::resolver resolver(ioc);
  Tcp::socket plain(ioc);
  std::optional<ssl::stream<Tcp::socket>> secure;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  boost::beast::flat_buffer buffer;
  std::optional<Error> failure;
  bool finished = false;
  const std::string where = url.host + ":" + url.port;

  const auto talk = [&](auto& stream) {
    http::async_write(stream, request, [&](const boost::system::error_code& ec, std::size_t) {
      if (ec) {
        failure = notifyError(errc::transport_failed, "write to " + where + ": " + ec.message());
        return;
      }
      http::async_read(
          stream, buffer, parser, [&](const boost::system::error_code& ec2, std::size_t) {
            // A receiver that answers and closes without a body past the limit is still an answer.
            if (ec2 && !(ec2 == http::error::body_limit && parser.is_header_done())) {
              failure =
                  notifyError(errc::transport_failed, "read from " + where + ": " + ec2.message());
              return;
            }
            finished = true;
          });
    });
  };
  if (context) {
    secure.emplace(ioc, *context);
    if (auto why = common::expectPeerHost(secure->native_handle(), url.host)) {
      return notifyError(errc::tls_failed, "TLS with " + where + ": " + *why);
    }
  }
  resolver.async_resolve(
      url.host, url.port,
      [&](const boost::system::error_code& ec, const Tcp::resolver::results_type& results) {
        if (ec) {
          failure = notifyError(errc::connect_failed, "resolve " + url.host + ": " + ec.message());
          return;
        }
        auto& socket = secure ? secure->next_layer() : plain;
        asio::async_connect(
            socket, results, [&](const boost::system::error_code& ec2, const Tcp::endpoint&) {
              if (ec2) {
                failure =
                    notifyError(errc::connect_failed, "connect to " + where + ": " + ec2.message());
                return;
              }
              if (!secure) return talk(plain);
              secure->async_handshake(
                  ssl::stream_base::client, [&](const boost::system::error_code& ec3) {
                    if (ec3) {
                      failure = notifyError(errc::tls_failed,
                                            "TLS handshake with " + where + ": " +
                                                sslReason(ec3, secure->native_handle()));
                      return;
                    }
                    talk(*secure);
                  });
            });
      });
  ioc.run_for(timeout);
  if (failure) return *failure;
  if (!finished) {
    return notifyError(errc::timeout, std::string(http::to_string(method)) + " " + where +
                                          ": no answer within " + std::to_string(timeout.count()) +
                                          " ms");
  }
  HttpAnswer answer;
  answer.status = static_cast<int>(parser.get().result_int());
  answer.body = std::move(parser.get().body());
  return answer;
}

}  // namespace

}  // namespace kfaild::notify
