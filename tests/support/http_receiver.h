#pragma once

// An HTTP(S) server in the test process that records every request it gets and answers each with
// a status the test chooses: the receiving end of kfaild's notifications. stop() closes the
// listening socket, so connections are refused until start() binds the same port again (a
// receiver that is down, then back).
//
// One thread serves one connection at a time. Thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kfaild::testing {

struct RecordedRequest {
  std::string method;
  std::string target;
  std::string content_type;
  std::string authorization;
  std::string body;
};

struct ReceiverTls {
  std::string cert_file;
  std::string key_file;
};

class HttpReceiver {
 public:
  explicit HttpReceiver(std::optional<ReceiverTls> tls = std::nullopt);
  ~HttpReceiver();
  HttpReceiver(const HttpReceiver&) = delete;
  HttpReceiver& operator=(const HttpReceiver&) = delete;

  // Listens on 127.0.0.1: a free port the first time, the same port afterwards.
  void start();
  void stop();
  std::uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/hook") const;

  void answerWith(int status);
  std::vector<RecordedRequest> requests() const;
  // Connections accepted (answered or not).
  std::size_t connections() const;
  // Waits until at least `n` requests were recorded; false on timeout.
  bool waitForRequests(std::size_t n, std::chrono::milliseconds timeout) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::optional<ReceiverTls> tls_;
  std::uint16_t port_ = 0;
};

}  // namespace kfaild::testing
