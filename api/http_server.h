#pragma once

// The HTTP/1.1 server (Boost.Beast over Asio) in front of a Router, over plain TCP or, with a
// certificate and key in ServerOptions::tls, over TLS 1.2 or newer (OpenSSL).
//
// Connections: keep-alive and pipelining (requests on one connection are answered in order);
// a request body over max_body_bytes gets 413 and a header block over max_header_bytes gets 431,
// both as problem documents, after which the connection is closed; a request that cannot be
// parsed gets 400 and the connection is closed. The read buffer holds at most max_header_bytes
// + 64 KiB: a chunked body whose chunk header (size line with extensions) or trailer does not
// fit, or whose chunk extensions exceed 1 KiB, gets 400 and the connection is closed, so a
// client cannot grow the server's memory through the parts of a request Beast does not limit. A
// connection that takes longer than read_timeout to send a request (or to take a response) is
// closed, so slow clients cannot hold a slot; an idle keep-alive connection is closed after the
// same time. Beyond max_connections open connections, or max_connections_per_peer from the new
// connection's peer (its IPv4 address, or the /64 of its IPv6 address: api/http_limits.h), a new
// connection is closed as soon as it is accepted.
//
// Before the body: a mutating request whose body is over 64 KiB or chunked is handed to
// Router::refuseBeforeBody() as soon as its header fields are read; a refusal they decide (no
// valid token, a viewer token, another Host or origin, no such route) is answered at once with
// `Connection: close` and the body is drained unread, so a client without the operator token
// cannot make the server hold max_body_bytes. A smaller body is read with the header (it fits
// the read buffer) and the request dispatched as any other, so the connection stays usable.
//
// TLS: the handshake has the same read_timeout as a request; a client that fails it (plain HTTP,
// an older protocol, no certificate when tls.client_ca_file is set, one that CA did not sign)
// is disconnected without an answer, logged at debug level. Everything above holds unchanged
// inside TLS; a connection being closed sends close_notify, then lingers as a plain one does.
//
// Auth: the router's access policy decides (api/access.h); the server copies the header fields it
// reads and the peer's address into the Request. No Authorization header is ever logged. When the
// router's policy has auth off (http.auth: none), listen() refuses a non-loopback address.
//
// Every answer carries Content-Security-Policy (only the server's own scripts, styles and
// connections; frame-ancestors 'none'), X-Content-Type-Options: nosniff, Referrer-Policy:
// no-referrer and X-Frame-Options: DENY.
//
// Logging: one debug line per request (method, path without query, status, µs).
//
// Threads: start() runs the io_context on `threads` threads of its own; handlers run there, so
// they must only read snapshots and the store, never wait on the probe or the writer.
// stop() (also called by the destructor) closes the listener and every connection and joins the
// threads; it returns as soon as running handlers finish. start() and stop() are for one owner
// thread; port() may be called from any thread after start().

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "api/router.h"
#include "server/common/result.h"

namespace kfaild::api {

// PEM files, read at listen(). Both cert_file and key_file, or neither (plain HTTP).
struct ServerTls {
  std::string cert_file;       // the server's certificate, then any intermediates
  std::string key_file;        // its private key (unencrypted)
  std::string client_ca_file;  // set: every client must present a certificate this CA signed
  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // an IP address or a name resolved at start()
  std::uint16_t port = 8080;       // 0: an ephemeral port, see HttpServer::port()
  std::size_t max_body_bytes = 1024 * 1024;
  std::size_t max_header_bytes = 16 * 1024;  // request line and header fields together
  std::chrono::milliseconds read_timeout{30'000};
  std::size_t max_connections = 1024;
  // Open connections from one peer address: many slow clients on one address cannot take every
  // slot and lock out /healthz and the operator. Above max_connections it has no effect.
  std::size_t max_connections_per_peer = 64;
  int threads = 2;
  // The server threads' nice value (0: leave them as the process is): above 0 they yield the CPU
  // to the probe and the writer.
  int nice = 10;
  ServerTls tls;
};

// Checks the values that need no network (ranges, TLS files given in pairs). listen() also
// checks the resolved address against the auth rule and loads the TLS files.
[[nodiscard]] Status validateOptions(const ServerOptions& options);

class HttpServer {
 public:
  // `router` must outlive the server and be fully set up before start().
  HttpServer(ServerOptions options, Router& router);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Validates the options, binds and listens, and starts the threads. Errors: invalid_options
  // (message names the option; for a TLS file that cannot be used, "tls.cert_file: ..." with the
  // file and OpenSSL's reason), listen_failed (message has "host:port" and the OS's reason).
  // A server is started at most once.
  [[nodiscard]] Status start();
  // start() in two steps, so that a daemon can claim its address before it starts anything else
  // and serve once its routes exist: listen() validates, binds and listens (connections wait in
  // the backlog); serve() starts accepting.
  [[nodiscard]] Status listen();
  [[nodiscard]] Status serve();
  void stop();

  // The port actually listened on (the ephemeral one when options.port was 0); 0 before start().
  std::uint16_t port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kfaild::api
