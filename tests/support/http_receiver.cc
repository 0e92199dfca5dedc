#include "tests/support/http_receiver.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <thread>

namespace kfaild::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using Tcp = asio::ip::tcp;

struct HttpReceiver::Impl {
  asio::io_context ioc;
  std::optional<asio::ssl::context> tls;
  std::optional<Tcp::acceptor> acceptor;
  std::thread thread;
  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  std::vector<RecordedRequest> requests;  // guarded by mutex
  std::size_t connections = 0;            // guarded by mutex
  int status = 200;                       // guarded by mutex

  template <typename Stream>
  void serve(Stream& stream) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> request;
    boost::system::error_code ec;
    http::read(stream, buffer, request, ec);
    if (ec) return;
    int answer = 0;
    {
      std::lock_guard lock(mutex);
      requests.push_back({std::string(request.method_string()), std::string(request.target()),
                          std::string(request[http::field::content_type]),
                          std::string(request[http::field::authorization]), request.body()});
      answer = status;
    }
    changed.notify_all();
    http::response<http::string_body> response{static_cast<http::status>(answer), 11};
    response.set(http::field::content_type, "text/plain");
    response.body() = answer / 100 == 2 ? "ok" : "refused by the test";
    response.keep_alive(false);
    response.prepare_payload();
    http::write(stream, response, ec);
  }

  void accept() {
    acceptor->async_accept([this](const boost::system::error_code& ec, Tcp::socket socket) {
      if (ec) return;
      {
        std::lock_guard lock(mutex);
        ++connections;
      }
      changed.notify_all();
      if (tls) {
        asio::ssl::stream<Tcp::socket> stream(std::move(socket), *tls);
        boost::system::error_code hs;
        stream.handshake(asio::ssl::stream_base::server, hs);
        if (!hs) {
          serve(stream);
          boost::system::error_code ignored;
          stream.shutdown(ignored);
        }
      } else {
        serve(socket);
        boost::system::error_code ignored;
        socket.shutdown(Tcp::socket::shutdown_both, ignored);
      }
      accept();
    });
  }
};

HttpReceiver::HttpReceiver(std::optional<ReceiverTls> tls)
    : impl_(std::make_unique<Impl>()), tls_(std::move(tls)) {
  if (tls_) {
    impl_->tls.emplace(asio::ssl::context::tls_server);
    impl_->tls->use_certificate_chain_file(tls_->cert_file);
    impl_->tls->use_private_key_file(tls_->key_file, asio::ssl::context::pem);
  }
}

HttpReceiver::~HttpReceiver() {
  stop();
}

void HttpReceiver::start() {
  stop();
  impl_->ioc.restart();
  impl_->acceptor.emplace(impl_->ioc);
  const Tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port_);
  impl_->acceptor->open(endpoint.protocol());
  impl_->acceptor->set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor->bind(endpoint);
  impl_->acceptor->listen();
  port_ = impl_->acceptor->local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

void HttpReceiver::stop() {
  if (!impl_->thread.joinable()) return;
  // Closed after the thread ends, not by a posted handler: one left queued would close the next
  // start's acceptor.
  impl_->ioc.stop();
  impl_->thread.join();
  boost::system::error_code ignored;
  impl_->acceptor->close(ignored);
  impl_->acceptor.reset();
}

std::string HttpReceiver::url(const std::string& path) const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + path;
}

void HttpReceiver::answerWith(int status) {
  std::lock_guard lock(impl_->mutex);
  impl_->status = status;
}

std::vector<RecordedRequest> HttpReceiver::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->requests;
}

std::size_t HttpReceiver::connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->connections;
}

bool HttpReceiver::waitForRequests(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->changed.wait_for(lock, timeout, [&] { return impl_->requests.size() >= n; });
}

}  // namespace kfaild::testing
