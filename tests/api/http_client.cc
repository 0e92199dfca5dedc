#include "tests/api/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace kfaild::api::testing {

namespace {

bool sameName(std::string_view a, std::string_view b) {
  return boost::beast::iequals(boost::beast::string_view(a.data(), a.size()),
                               boost::beast::string_view(b.data(), b.size()));
}

boost::beast::string_view beastView(std::string_view s) {
  return {s.data(), s.size()};
}

}  // namespace

std::string HttpReply::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (sameName(key, name)) return value;
  }
  return "";
}

bool HttpReply::hasHeader(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (sameName(key, name)) return true;
  }
  return false;
}

struct HttpConnection::Stream {
  explicit Stream(std::chrono::milliseconds limit) : socket(ioc), deadline(limit) {}

  // Runs one asynchronous operation to completion or to the deadline.
  template <typename Start>
  boost::system::error_code run(Start&& start) {
    boost::system::error_code result = boost::asio::error::would_block;
    socket.expires_after(deadline);
    start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return result;
  }

  boost::asio::io_context ioc;
  boost::beast::tcp_stream socket;
  boost::beast::flat_buffer buffer;
  std::chrono::milliseconds deadline;
};

HttpConnection::HttpConnection(std::uint16_t port, std::chrono::milliseconds deadline)
    : stream_(std::make_unique<Stream>(deadline)) {
  namespace asio = boost::asio;
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  const auto ec = stream_->run([&](auto done) { stream_->socket.async_connect(endpoint, done); });
  if (ec) throw std::runtime_error("connect to port " + std::to_string(port) + ": " + ec.message());
}

HttpConnection::~HttpConnection() = default;

void HttpConnection::send(const HttpRequestSpec& spec) {
  namespace http = boost::beast::http;
  http::request<http::string_body> request;
  request.method_string(beastView(spec.method));
  request.target(beastView(spec.target));
  request.version(11);
  request.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : spec.headers) request.set(beastView(name), value);
  request.body() = spec.body;
  request.prepare_payload();
  const auto ec =
      stream_->run([&](auto done) { http::async_write(stream_->socket, request, done); });
  if (ec) throw std::runtime_error("write: " + ec.message());
}

HttpReply HttpConnection::receive(bool head) {
  namespace http = boost::beast::http;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  parser.skip(head);
  const auto ec = stream_->run(
      [&](auto done) { http::async_read(stream_->socket, stream_->buffer, parser, done); });
  if (ec) throw std::runtime_error("read: " + ec.message());
  auto& message = parser.get();
  HttpReply reply;
  reply.status = static_cast<int>(message.result_int());
  reply.body = message.body();
  reply.keep_alive = message.keep_alive();
  for (const auto& field : message) {
    reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return reply;
}

void HttpConnection::writeRaw(std::string_view bytes) {
  const auto ec = stream_->run([&](auto done) {
    boost::asio::async_write(stream_->socket, boost::asio::buffer(bytes.data(), bytes.size()),
                             done);
  });
  if (ec) throw std::runtime_error("raw write: " + ec.message());
}

bool HttpConnection::closedByServer(std::chrono::milliseconds within, std::string* received) {
  const auto saved = stream_->deadline;
  stream_->deadline = within;
  auto& buffer = stream_->buffer;
  std::string data(static_cast<const char*>(buffer.data().data()), buffer.size());
  buffer.consume(buffer.size());
  bool closed = false;
  for (;;) {
    char chunk[4096];
    std::size_t n = 0;
    const auto ec = stream_->run([&](auto done) {
      stream_->socket.async_read_some(boost::asio::buffer(chunk),
                                      [&n, done](auto error, std::size_t k) {
                                        n = k;
                                        done(error, k);
                                      });
    });
    data.append(chunk, n);
    if (!ec) continue;
    closed = ec != boost::beast::error::timeout;
    break;
  }
  stream_->deadline = saved;
  if (received != nullptr) *received += data;
  return closed;
}

}  // namespace kfaild::api::testing
