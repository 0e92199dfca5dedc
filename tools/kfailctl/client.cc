#include "tools/kfailctl/client.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <system_error>

#include "server/common/tls_verify.h"

namespace kfaild::ctl {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

Error failure(const std::string& message) {
  return Error{std::make_error_code(std::errc::invalid_argument), message};
}

bool isTlsError(const beast::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         ec.category() == ssl::error::get_stream_category();
}

// One line saying what failed and what to do about it.
std::string tlsFailure(const beast::error_code& ec, SSL* ssl, const std::string& url,
                       bool has_ca_file) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
    return "TLS: certificate verify failed (" + std::string(X509_verify_cert_error_string(verify)) +
           ") for " + url +
           ": the server's certificate does not name this host; use the name or "
           "address it was issued for";
  }
  if (verify != X509_V_OK) {
    return "TLS: certificate verify failed (" + std::string(X509_verify_cert_error_string(verify)) +
           ") for " + url + ": " +
           (has_ca_file ? "the --ca-file given did not sign the server's certificate; pass the CA "
                          "that did"
                        : "pass --ca-file with the CA that signed the server's certificate");
  }
  std::string reason = ec.message();
  const auto lib = reason.find(" (SSL routines)");
  if (lib != std::string::npos) reason.erase(lib);
  std::string hint;
  if (reason.find("certificate required") != std::string::npos ||
      reason.find("handshake failure") != std::string::npos) {
    hint = ": kfaild may require a client certificate (--cert-file and --key-file)";
  } else if (reason.find("unknown ca") != std::string::npos ||
             reason.find("bad certificate") != std::string::npos) {
    hint = ": kfaild refused the client certificate (--cert-file)";
  } else if (reason.find("wrong version number") != std::string::npos ||
             reason.find("packet length too long") != std::string::npos) {
    hint = ": is it serving plain http://?";
  }
  return "TLS: " + reason + " for " + url + hint;
}

}  // namespace

Result<Endpoint> parseUrl(const std::string& url) {
  Endpoint endpoint;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
    endpoint.tls = true;
  } else {
    return failure("--url must start with http:// or https://, got \"" + url + "\"");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos)
    return failure("--url takes no path, got \"" + url + "\"");
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos ||
      (rest.find(']') != std::string::npos && colon < rest.find(']'))) {
    endpoint.host = rest;
    endpoint.port = endpoint.tls ? "443" : "80";
  } else {
    endpoint.host = rest.substr(0, colon);
    endpoint.port = rest.substr(colon + 1);
  }
  if (endpoint.host.size() > 2 && endpoint.host.front() == '[' && endpoint.host.back() == ']') {
    endpoint.host = endpoint.host.substr(1, endpoint.host.size() - 2);
  }
  if (endpoint.host.empty()) return failure("--url has no host: \"" + url + "\"");
  if (endpoint.port.empty() || endpoint.port.find_first_not_of("0123456789") != std::string::npos ||
      endpoint.port.size() > 5 || std::stoi(endpoint.port) > 65535) {
    return failure("--url has no valid port: \"" + url + "\"");
  }
  return endpoint;
}

Result<Client> Client::create(Endpoint endpoint, std::string token,
                              std::chrono::milliseconds timeout, const TlsFiles& tls) {
  if (!endpoint.tls) {
    if (!tls.empty())
      return failure("--ca-file, --cert-file and --key-file need an https:// --url");
    return Client(std::move(endpoint), std::move(token), timeout, nullptr);
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return failure(tls.cert_file.empty() ? "--key-file needs --cert-file"
                                         : "--cert-file needs --key-file");
  }
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  if (auto problem = common::makeVerifyingClient(context->native_handle(),
                                                 {tls.ca_file, tls.cert_file, tls.key_file})) {
    using Key = common::TlsFileProblem::Key;
    if (problem->key == Key::ca_file && tls.ca_file.empty()) {
      return failure("TLS: cannot load the system's CAs: " + problem->reason);
    }
    constexpr const char* kOptions[] = {"--ca-file", "--cert-file", "--key-file"};
    return failure(std::string(kOptions[static_cast<int>(problem->key)]) + " " + problem->file +
                   ": cannot use it: " + problem->reason);
  }
  Client client(std::move(endpoint), std::move(token), timeout, std::move(context));
  client.has_ca_file_ = !tls.ca_file.empty();
  return client;
}

Client::Client(Endpoint endpoint, std::string token, std::chrono::milliseconds timeout,
               std::shared_ptr<ssl::context> tls)
    : endpoint_(std::move(endpoint)),
      token_(std::move(token)),
      timeout_(timeout),
      tls_(std::move(tls)) {}

std::string Client::url() const {
  const bool v6 = endpoint_.host.find(':') != std::string::npos;
  return std::string(tls_ ? "https://" : "http://") +
         (v6 ? "[" + endpoint_.host + "]" : endpoint_.host) + ":" + endpoint_.port;
}

Result<Reply> Client::call(const std::string& method, const std::string& target,
                           const std::string& body) {
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  std::optional<beast::ssl_stream<beast::tcp_stream&>> tls_stream;
  boost::asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  const std::string where = endpoint_.host + ":" + endpoint_.port;
  auto results = resolver.resolve(endpoint_.host, endpoint_.port, ec);
  if (ec) return Error{ec, "cannot resolve " + where + ": " + ec.message()};
  stream.expires_after(timeout_);
  stream.connect(results, ec);
  if (ec) return Error{ec, "cannot connect to kfaild at " + where + ": " + ec.message()};

  if (tls_) {
    tls_stream.emplace(stream, *tls_);
    SSL* native = tls_stream->native_handle();
    // The certificate must name the host of the URL, as an IP address or a DNS name.
    if (auto why = common::expectPeerHost(native, endpoint_.host)) {
      return failure("TLS: " + *why + " for " + url());
    }
    stream.expires_after(timeout_);
    tls_stream->handshake(ssl::stream_base::client, ec);
    if (ec) return Error{ec, tlsFailure(ec, native, url(), has_ca_file_)};
  }

  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  request.set(http::field::host, endpoint_.host);
  request.set(http::field::user_agent, "kfailctl");
  request.set(http::field::accept, "application/json");
  // What kfaild asks of a body-less change when it runs without tokens (api/access.h).
  request.set("X-Kfaild-Client", "kfailctl");
  if (!token_.empty()) request.set(http::field::authorization, "Bearer " + token_);
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = body;
  }
  request.prepare_payload();
  stream.expires_after(timeout_);
  if (tls_stream) {
    http::write(*tls_stream, request, ec);
  } else {
    http::write(stream, request, ec);
  }
  // Under TLS 1.3 a server refusing our client certificate may close before the request is out.
  if (ec && tls_stream &&
      (ec == boost::asio::error::connection_reset || ec == boost::asio::error::broken_pipe)) {
    return Error{ec, "TLS: " + ec.message() + " right after the handshake for " + url() +
                         ": kfaild may require a client certificate (--cert-file and --key-file)"};
  }
  if (ec) return Error{ec, "sending to " + where + " failed: " + ec.message()};

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256 * 1024 * 1024);
  if (tls_stream) {
    http::read(*tls_stream, buffer, parser, ec);
  } else {
    http::read(stream, buffer, parser, ec);
  }
  // With TLS 1.3 the server checks the client's certificate after the client's handshake has
  // ended: its refusal arrives as an alert here.
  if (ec && tls_stream && isTlsError(ec)) {
    return Error{ec, tlsFailure(ec, tls_stream->native_handle(), url(), has_ca_file_)};
  }
  if (ec) return Error{ec, "reading the answer of " + where + " failed: " + ec.message()};
  beast::error_code ignored;
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  const auto& response = parser.get();
  Reply reply;
  reply.status = static_cast<int>(response.result_int());
  reply.content_type = std::string(response[http::field::content_type]);
  reply.body = response.body();
  return reply;
}

}  // namespace kfaild::ctl
