#include "api/http_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "api/errc.h"
#include "api/http_limits.h"
#include "server/common/worker.h"

namespace kfaild::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// After an error response the client may still be sending (a body we refused). Closing at once
// would make the kernel answer with RST and the client could lose our response, so we read and
// discard for a while first.
constexpr std::chrono::milliseconds kLingerTimeout{2000};
constexpr std::chrono::milliseconds kAcceptRetry{100};
// What the read buffer holds beyond the header limit: one read's worth of body, pipelined requests
// or a chunk header. A chunk header (size and extensions) or a trailer that does not fit fails
// the read instead of growing the buffer: Beast bounds neither by the header or body limit.
constexpr std::size_t kReadSlack = 64 * 1024;
// Chunk extensions carry nothing kfaild reads; longer ones are refused.
constexpr std::size_t kMaxChunkExtension = 1024;

std::string_view view(beast::string_view text) {
  return {text.data(), text.size()};
}

template <typename Fields>
std::optional<std::string> field(const http::request<http::string_body, Fields>& message,
                                 http::field name) {
  const auto it = message.find(name);
  if (it == message.end()) return std::nullopt;
  return std::string(view(it->value()));
}

// The fields api/access.h reads; the rest of the header stays in Beast's buffer.
template <typename Fields>
RequestHeaders headersOf(const http::request<http::string_body, Fields>& message) {
  RequestHeaders headers;
  headers.host = field(message, http::field::host);
  headers.origin = field(message, http::field::origin);
  headers.content_type = field(message, http::field::content_type);
  if (const auto it = message.find("Sec-Fetch-Site"); it != message.end()) {
    headers.sec_fetch_site = std::string(view(it->value()));
  }
  const auto [first, last] = message.equal_range(http::field::authorization);
  for (auto it = first; it != last; ++it) headers.authorization.emplace_back(view(it->value()));
  headers.client_header = message.find("X-Kfaild-Client") != message.end();
  return headers;
}

// The headers every answer carries: the dashboard's pages run only kfaild's own scripts, are
// never framed, never sniffed and never leak the URL to another site.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'";

std::string endpointText(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool isLoopback(const asio::ip::address& address) {
  if (address.is_loopback()) return true;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).is_loopback();
  }
  return false;
}

// OpenSSL's reason for a file it could not use: the first error it queued, the innermost ("no
// start line", "key values mismatch", "No such file or directory"; the later ones only say
// "PEM lib"), or the error code's message when it queued none.
std::string opensslReason(const beast::error_code& ec) {
  std::string reason;
  while (const unsigned long code = ERR_get_error()) {
    const char* text = ERR_reason_error_string(code);
    if (reason.empty() && text != nullptr) reason = text;
  }
  // OpenSSL 3 reads keys through decoders that queue nothing of their own.
  if (reason == "PEM lib")
    return "not a PEM file of the expected kind (an unencrypted key, a certificate)";
  return reason.empty() ? ec.message() : reason;
}

Result<std::unique_ptr<ssl::context>> serverTlsContext(const ServerTls& tls) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  const auto refuse = [](const char* key, const std::string& file, const std::string& reason) {
    return Error{errc::invalid_options, std::string(key) + ": cannot use " + file + ": " + reason};
  };
  SSL_CTX* native = context->native_handle();
  ERR_clear_error();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    return Error{errc::invalid_options, "tls: OpenSSL refuses TLS 1.2 as the minimum version"};
  }
  context->set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                       ssl::context::single_dh_use);
  beast::error_code ec;
  context->use_certificate_chain_file(tls.cert_file, ec);
  if (ec) return refuse("tls.cert_file", tls.cert_file, opensslReason(ec));
  context->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec) return refuse("tls.key_file", tls.key_file, opensslReason(ec));
  if (SSL_CTX_check_private_key(native) != 1) {
    return refuse("tls.key_file", tls.key_file,
                  "not the key of the certificate in " + tls.cert_file);
  }
  if (!tls.client_ca_file.empty()) {
    context->load_verify_file(tls.client_ca_file, ec);
    if (ec) return refuse("tls.client_ca_file", tls.client_ca_file, opensslReason(ec));
    // Tells clients which CA to pick their certificate for.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(native, names);
    }
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  ERR_clear_error();
  return context;
}

}  // namespace

Status validateOptions(const ServerOptions& options) {
  const auto invalid = [](std::string message) {
    return Status(Error{errc::invalid_options, std::move(message)});
  };
  if (options.host.empty()) return invalid("host: must not be empty");
  if (options.threads < 1 || options.threads > 16) {
    return invalid("threads: must be between 1 and 16, got " + std::to_string(options.threads));
  }
  if (options.max_connections < 1) return invalid("max_connections: must be at least 1");
  if (options.max_connections_per_peer < 1)
    return invalid("max_connections_per_peer: must be at least 1");
  if (options.max_body_bytes < 1 || options.max_body_bytes > (std::size_t{1} << 30)) {
    return invalid("max_body_bytes: must be between 1 and 1073741824, got " +
                   std::to_string(options.max_body_bytes));
  }
  if (options.max_header_bytes < 1024 || options.max_header_bytes > (std::size_t{1} << 20)) {
    return invalid("max_header_bytes: must be between 1024 and 1048576, got " +
                   std::to_string(options.max_header_bytes));
  }
  if (options.read_timeout.count() <= 0) {
    return invalid("read_timeout: must be positive, got " +
                   std::to_string(options.read_timeout.count()) + " ms");
  }
  if (options.tls.enabled() && (options.tls.cert_file.empty() || options.tls.key_file.empty())) {
    return invalid(options.tls.cert_file.empty() ? "tls.cert_file: required with tls.key_file"
                                                 : "tls.key_file: required with tls.cert_file");
  }
  if (!options.tls.client_ca_file.empty() && !options.tls.enabled()) {
    return invalid("tls.client_ca_file: needs tls.cert_file and tls.key_file");
  }
  return okStatus();
}

class HttpServer::Impl {
 public:
  class Connection;
  template <typename Stream>
  class Session;

  Impl(ServerOptions options, Router& router)
      : options_(std::move(options)),
        router_(router),
        per_peer_(options_.max_connections_per_peer),
        ioc_(std::max(1, options_.threads)),
        acceptor_(ioc_),
        accept_retry_(ioc_) {}

  ~Impl() { stop(); }

  Status listen();
  Status serve();
  Status start();
  void stop();
  std::uint16_t port() const { return port_.load(); }

  const ServerOptions& options() const { return options_; }
  Router& router() { return router_; }
  bool stopping() const { return stopping_.load(); }
  void sessionEnded(Connection* session) {
    std::lock_guard lock(sessions_mutex_);
    const auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    per_peer_.release(it->second.peer);
    sessions_.erase(it);
  }

 private:
  void accept();
  void admit(tcp::socket socket);

  ServerOptions options_;
  Router& router_;
  std::atomic<std::uint16_t> port_{0};
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  bool listening_ = false;
  bool serving_ = false;

  // Declared before the io_context: sessions destroyed while it shuts down still unregister
  // and still have their TLS context.
  struct OpenConnection {
    std::weak_ptr<Connection> session;
    std::string peer;  // its bucket in per_peer_
  };
  std::mutex sessions_mutex_;
  std::unordered_map<Connection*, OpenConnection> sessions_;  // guarded by sessions_mutex_
  PeerConnections per_peer_;                                  // guarded by sessions_mutex_
  std::unique_ptr<ssl::context> tls_;  // set by listen() when options_.tls is enabled

  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

// What the server needs of a connection of either kind to close it at stop().
class HttpServer::Impl::Connection {
 public:
  virtual ~Connection() = default;
  // Only while no thread runs the io_context (HttpServer::stop()).
  virtual void closeNow() = 0;
};

// One connection over `Stream`: beast::tcp_stream, or TlsStream over one. Everything runs on its
// strand; the shared_ptr held by the pending operation keeps it alive, so it ends when its last
// operation completes without starting another.
template <typename Stream>
class HttpServer::Impl::Session : public Connection,
                                  public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

 public:
  template <typename... TlsContext>
  Session(tcp::socket socket, HttpServer::Impl& server, TlsContext&... context)
      : remote_address_(remoteAddressOf(socket)),
        stream_(std::move(socket), context...),
        server_(server),
        buffer_(server.options().max_header_bytes + kReadSlack) {}
  ~Session() override { server_.sessionEnded(this); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        self->handshake();
      } else {
        self->readRequest();
      }
    });
  }

  void closeNow() override {
    beast::error_code ignored;
    socket().shutdown(tcp::socket::shutdown_both, ignored);
    socket().close(ignored);
  }

 private:
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }
  tcp::socket& socket() { return tcp().socket(); }

  void handshake() {
    tcp().expires_after(server_.options().read_timeout);
    stream_.async_handshake(ssl::stream_base::server,
                            [self = shared_from_this()](beast::error_code ec) {
                              if (self->server_.stopping()) return;
                              if (ec) {
                                // Nothing to answer in: the client does not speak our TLS.
                                spdlog::debug("http: TLS handshake failed: {}", ec.message());
                                beast::error_code ignored;
                                self->socket().close(ignored);
                                return;
                              }
                              self->readRequest();
                            });
  }

  void readRequest() {
    parser_.emplace();
    parser_->body_limit(server_.options().max_body_bytes);
    parser_->header_limit(static_cast<std::uint32_t>(server_.options().max_header_bytes));
    parser_->on_chunk_header(on_chunk_header_);
    tcp().expires_after(server_.options().read_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onHeader(ec); });
  }

  // A mutating request whose body is more than the read buffer holds anyway (or chunked) is
  // refused here when its header fields decide it (no valid token, another Host or origin, no
  // such route), before its body is read: a client without a token cannot make the server hold
  // max_body_bytes per connection. The connection then closes, its body drained unread.
  void onHeader(beast::error_code ec) {
    if (server_.stopping()) return;
    if (ec) return onRead(ec);
    auto& message = parser_->get();
    const auto length = parser_->content_length();
    const bool small_body = !parser_->chunked() && length && *length <= kReadSlack;
    if (Router::isMutating(view(message.method_string())) && !small_body) {
      started_ = Clock::now();
      if (auto request = requestOf(message)) {
        if (auto refused = server_.router().refuseBeforeBody(*request)) {
          return write(std::move(*refused), request->method, request->path, false,
                       message.version(), false);
        }
      }
    }
    if (parser_->is_done()) return onRead(ec);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code body_ec, std::size_t) {
                       self->onRead(body_ec);
                     });
  }

  // The request of a message whose target is a path; its body as read so far.
  std::optional<Request> requestOf(http::request<http::string_body>& message) const {
    auto target = parseTarget(view(message.target()));
    if (!target) return std::nullopt;
    Request request;
    request.method = std::string(view(message.method_string()));
    request.path = std::move(target->path);
    request.segments = std::move(target->segments);
    request.query = std::move(target->query);
    request.headers = headersOf(message);
    request.remote_address = remote_address_;
    return request;
  }

  void onRead(beast::error_code ec) {
    if (server_.stopping()) return;
    started_ = Clock::now();
    if (ec == http::error::end_of_stream) return shutdown();
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted) return;
    if (ec == http::error::body_limit) {
      return respondError(ProblemType::kPayloadTooLarge,
                          "the request body exceeds the limit of " +
                              std::to_string(server_.options().max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return respondError(ProblemType::kHeadersTooLarge,
                          "the request line and header fields exceed the limit of " +
                              std::to_string(server_.options().max_header_bytes) + " bytes");
    }
    if (ec == http::error::buffer_overflow || ec == http::error::bad_chunk_extension) {
      if (parser_ && parser_->is_header_done()) {
        return respondError(ProblemType::kMalformedRequest,
                            "a chunk header (size and extensions, at most " +
                                std::to_string(kMaxChunkExtension) +
                                " bytes of extensions) or the trailer is too long");
      }
      return respondError(ProblemType::kHeadersTooLarge,
                          "the request line and header fields exceed the limit of " +
                              std::to_string(server_.options().max_header_bytes) + " bytes");
    }
    if (ec == http::error::partial_message) return;  // the client went away mid-request
    if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
      return respondError(ProblemType::kMalformedRequest,
                          "the request is not valid HTTP/1.1: " + ec.message());
    }
    if (ec) return;  // reset, broken pipe: nobody to answer

    auto& message = parser_->get();
    const bool head = message.method() == http::verb::head;
    auto request = requestOf(message);
    Response response;
    if (!request) {
      const std::string_view raw_target = view(message.target());
      request.emplace();
      request->method = std::string(view(message.method_string()));
      request->path = std::string(raw_target.substr(0, raw_target.find('?')));
      const bool is_path = !request->path.empty() && request->path.front() == '/';
      response = problem(ProblemType::kMalformedRequest, parseTarget(raw_target).error().message,
                         is_path ? request->path : std::string());
    } else {
      request->body = std::move(message.body());
      response = server_.router().dispatch(*request);
    }
    write(std::move(response), request->method, request->path, head, message.version(),
          message.keep_alive());
  }

  // Answers a request that could not be read completely; the connection cannot be reused.
  void respondError(ProblemType type, std::string detail) {
    std::string method = "-";
    std::string path = "-";
    std::string instance;
    // The request line may have been read even when the header was not (a body or header
    // limit hit while parsing the fields).
    const std::string_view target = parser_ ? view(parser_->get().target()) : std::string_view();
    if (!target.empty()) {
      method = std::string(view(parser_->get().method_string()));
      path = std::string(target.substr(0, target.find('?')));
      if (!path.empty() && path.front() == '/') instance = path;
    }
    write(problem(type, std::move(detail), instance), method, path, false, 11, false);
  }

  void write(Response response, const std::string& method, const std::string& path, bool head,
             unsigned version, bool keep_alive) {
    auto message = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), version);
    if (!response.content_type.empty())
      message->set(http::field::content_type, response.content_type);
    message->set(http::field::cache_control, "no-store");
    message->set("Content-Security-Policy",
                 beast::string_view(kContentSecurityPolicy.data(), kContentSecurityPolicy.size()));
    message->set("X-Content-Type-Options", "nosniff");
    message->set("Referrer-Policy", "no-referrer");
    message->set("X-Frame-Options", "DENY");
    for (const auto& [name, value] : response.headers) message->set(name, value);
    message->keep_alive(keep_alive);
    message->body() = std::move(response.body);
    message->prepare_payload();
    // HEAD gets GET's Content-Length without the body.
    if (head) message->body().clear();

    server_.router().responses().record(response.status);
    const auto micros =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started_).count();
    spdlog::debug("http: {} {} {} {}us", printable(method, 32), printable(path), response.status,
                  micros);

    tcp().expires_after(server_.options().read_timeout);
    http::async_write(
        stream_, *message,
        [self = shared_from_this(), message, keep_alive](beast::error_code ec, std::size_t) {
          if (self->server_.stopping() || ec) return;
          if (keep_alive) return self->readRequest();
          self->shutdown();
        });
  }

  void shutdown() {
    tcp().expires_after(
        std::min<std::chrono::milliseconds>(kLingerTimeout, server_.options().read_timeout));
    if constexpr (kTls) {
      // Sends close_notify, then lingers as a plain connection does. OpenSSL would wait for the
      // client's close_notify and fail on the data a client still sends before it (a refused
      // body), so it is told that it arrived already; what comes after is drained undecrypted.
      SSL* ssl = stream_.native_handle();
      SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_RECEIVED_SHUTDOWN);
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) {
        if (self->server_.stopping()) return;
        beast::error_code ignored;
        self->socket().shutdown(tcp::socket::shutdown_send, ignored);
        self->drain();
      });
    } else {
      beast::error_code ignored;
      socket().shutdown(tcp::socket::shutdown_send, ignored);
      drain();
    }
  }

  // Reads and discards the raw bytes of the connection until the client closes it or the
  // linger time ends.
  void drain() {
    tcp().async_read_some(asio::buffer(drain_),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            if (self->server_.stopping()) return;
                            if (ec) {
                              beast::error_code ignored;
                              self->socket().close(ignored);
                              return;
                            }
                            self->drain();
                          });
  }

  static std::string remoteAddressOf(const tcp::socket& socket) {
    beast::error_code ec;
    const auto endpoint = socket.remote_endpoint(ec);
    return ec ? std::string("-") : endpoint.address().to_string();
  }

  std::string remote_address_;  // before stream_, which takes the socket
  Stream stream_;
  HttpServer::Impl& server_;
  beast::flat_buffer buffer_;  // at most max_header_bytes + kReadSlack
  std::optional<http::request_parser<http::string_body>> parser_;
  // Beast keeps a reference: it lives as long as the session.
  std::function<void(std::uint64_t, beast::string_view, beast::error_code&)> on_chunk_header_ =
      [](std::uint64_t, beast::string_view extensions, beast::error_code& ec) {
        if (extensions.size() > kMaxChunkExtension) ec = http::error::bad_chunk_extension;
      };
  Clock::time_point started_ = Clock::now();
  std::array<char, 16 * 1024> drain_{};
};

Status HttpServer::Impl::start() {
  if (auto listening = listen(); !listening) return listening;
  return serve();
}

Status HttpServer::Impl::listen() {
  if (started_) return Error{errc::invalid_options, "the server was already started"};
  if (auto valid = validateOptions(options_); !valid) return valid;
  started_ = true;

  if (options_.tls.enabled()) {
    auto context = serverTlsContext(options_.tls);
    if (!context) return context.error();
    tls_ = std::move(*context);
  }

  const std::string where = endpointText(options_.host, options_.port);
  beast::error_code ec;
  tcp::endpoint endpoint;
  const auto address = asio::ip::make_address(options_.host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, options_.port);
  } else {
    tcp::resolver resolver(ioc_);
    const auto results = resolver.resolve(options_.host, std::to_string(options_.port), ec);
    if (ec || results.empty()) {
      return Error{errc::listen_failed, "cannot listen on " + where + ": cannot resolve host: " +
                                            (ec ? ec.message() : std::string("no address"))};
    }
    endpoint = results.begin()->endpoint();
  }
  if (!router_.access().authEnabled() && !isLoopback(endpoint.address())) {
    return Error{errc::invalid_options,
                 "auth: a token is required to listen on " + where + " (" +
                     endpoint.address().to_string() +
                     " is not a loopback address, and without a token anyone who can reach it "
                     "could call the mutating endpoints)"};
  }

  const auto fail = [&where](const char* step, const beast::error_code& error) {
    return Status(Error{errc::listen_failed,
                        "cannot listen on " + where + ": " + step + ": " + error.message()});
  };
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return fail("open", ec);
  // Lets a restarted kfaild bind again while old connections sit in TIME_WAIT.
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) return fail("SO_REUSEADDR", ec);
  acceptor_.bind(endpoint, ec);
  if (ec) return fail("bind", ec);
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen", ec);
  port_ = acceptor_.local_endpoint(ec).port();
  if (ec) return fail("local address", ec);
  listening_ = true;
  return okStatus();
}

Status HttpServer::Impl::serve() {
  if (!listening_ || serving_)
    return Error{errc::invalid_options, "serve() needs listen() first, and only once"};
  serving_ = true;
  beast::error_code ec;
  const auto endpoint = acceptor_.local_endpoint(ec);
  work_.emplace(ioc_.get_executor());
  accept();
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] {
      common::nameThisThread("kfaild:http");
      // Below the probe: a burst of API requests must not delay the probe's sends and acks on a
      // busy host. Lowering a thread's own priority needs no privilege.
      if (options_.nice > 0 &&
          setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), options_.nice) != 0) {
        spdlog::warn("http: cannot lower the priority of a server thread to nice {}",
                     options_.nice);
      }
      ioc_.run();
    });
  }
  spdlog::info(
      "http: listening on {} ({}, {} thread(s) at nice {}, {})",
      endpointText(endpoint.address().to_string(), port_.load()),
      !tls_ ? "plain HTTP"
            : (options_.tls.client_ca_file.empty() ? "TLS" : "TLS, client certificates required"),
      options_.threads, options_.nice,
      router_.access().authEnabled() ? "bearer token required for changes" : "auth none: no token");
  return okStatus();
}

void HttpServer::Impl::accept() {
  acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors, typically: wait a moment instead of spinning on the error.
      spdlog::warn("http: accept failed: {}", ec.message());
      accept_retry_.expires_after(kAcceptRetry);
      accept_retry_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && !stopping_) accept();
      });
      return;
    }
    admit(std::move(socket));
    accept();
  });
}

void HttpServer::Impl::admit(tcp::socket socket) {
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  std::shared_ptr<Session<TlsStream>> tls_session;
  std::shared_ptr<Session<beast::tcp_stream>> session;
  {
    std::lock_guard lock(sessions_mutex_);
    if (sessions_.size() >= options_.max_connections) {
      spdlog::debug("http: {} connections open, closing a new one", sessions_.size());
      socket.close(ignored);
      return;
    }
    const auto endpoint = socket.remote_endpoint(ignored);
    const std::string address = ignored ? std::string("-") : endpoint.address().to_string();
    auto bucket = per_peer_.admit(address);
    if (!bucket) {
      spdlog::debug("http: {} connections open from {}, closing a new one", per_peer_.open(address),
                    peerBucket(address));
      socket.close(ignored);
      return;
    }
    if (tls_) {
      tls_session = std::make_shared<Session<TlsStream>>(std::move(socket), *this, *tls_);
      sessions_.emplace(tls_session.get(), OpenConnection{tls_session, std::move(*bucket)});
    } else {
      session = std::make_shared<Session<beast::tcp_stream>>(std::move(socket), *this);
      sessions_.emplace(session.get(), OpenConnection{session, std::move(*bucket)});
    }
  }
  if (tls_session) tls_session->run();
  if (session) session->run();
}

void HttpServer::Impl::stop() {
  if (!started_ || stopping_.exchange(true)) return;
  work_.reset();
  ioc_.stop();
  for (auto& thread : threads_) thread.join();
  threads_.clear();

  beast::error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard lock(sessions_mutex_);
    for (auto& [raw, entry] : sessions_) {
      if (auto session = entry.session.lock()) open.push_back(std::move(session));
    }
  }
  for (auto& session : open) session->closeNow();
  open.clear();
  // Lets the cancelled operations complete so that sessions release their memory now.
  ioc_.restart();
  ioc_.poll();
  spdlog::info("http: stopped");
}

HttpServer::HttpServer(ServerOptions options, Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() = default;

Status HttpServer::start() {
  return impl_->start();
}

Status HttpServer::listen() {
  return impl_->listen();
}

Status HttpServer::serve() {
  return impl_->serve();
}

void HttpServer::stop() {
  impl_->stop();
}

std::uint16_t HttpServer::port() const {
  return impl_->port();
}

}  // namespace kfaild::api
