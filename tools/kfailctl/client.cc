#include "tools/kfailctl/client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <system_error>

namespace kfaild::ctl {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

Error failure(const std::string& message) {
  return Error{std::make_error_code(std::errc::invalid_argument), message};
}

}  // namespace

Result<Endpoint> parseUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return failure("--url must start with http://, got \"" + url + "\"");
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) return failure("--url takes no path, got \"" + url + "\"");
  Endpoint endpoint;
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || (rest.find(']') != std::string::npos && colon < rest.find(']'))) {
    endpoint.host = rest;
    endpoint.port = "80";
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

Client::Client(Endpoint endpoint, std::string token, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), token_(std::move(token)), timeout_(timeout) {}

Result<Reply> Client::call(const std::string& method, const std::string& target, const std::string& body) {
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  boost::asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  const std::string where = endpoint_.host + ":" + endpoint_.port;
  auto results = resolver.resolve(endpoint_.host, endpoint_.port, ec);
  if (ec) return Error{ec, "cannot resolve " + where + ": " + ec.message()};
  stream.expires_after(timeout_);
  stream.connect(results, ec);
  if (ec) return Error{ec, "cannot connect to kfaild at " + where + ": " + ec.message()};

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
  http::write(stream, request, ec);
  if (ec) return Error{ec, "sending to " + where + " failed: " + ec.message()};

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256 * 1024 * 1024);
  http::read(stream, buffer, parser, ec);
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
