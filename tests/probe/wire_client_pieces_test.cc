// The wire client against a broker of the test's own on loopback that writes every answer in
// pieces, with pauses between them: a size prefix cut in two, the rest of a small answer, and a
// metadata answer larger than the client's SO_RCVLOWAT cap. The client asks the socket for an
// answer's rest whole (WireClient's drain()); whatever it asks, every answer must still be read.
// The same test runs the probe's ticks on the client's I/O thread (tickOnIoThread): on that
// thread, never before their time, with their messages acked, and none once stopTicking()
// returned.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/common/clock.h"
#include "server/kafka/wire.h"
#include "server/probe/wire_client.h"

namespace wire_client_pieces_test {

using namespace kfaild;
using Bytes = std::vector<std::uint8_t>;

namespace {

constexpr std::int16_t kProduce = 0;
constexpr std::int16_t kMetadata = 3;

bool readAll(int fd, std::uint8_t* to, std::size_t n) {
  while (n > 0) {
    const auto got = ::recv(fd, to, n, 0);
    if (got <= 0) return false;
    to += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

// One broker, node 1, leader of t[0]. It answers Metadata and Produce (every partition asked,
// offsets counting up) and never Fetch; each answer goes out in pieces of 1, 2 and 5 bytes, then
// 16 KiB at a time, 3 ms apart.
class PieceBroker {
 public:
  PieceBroker() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    REQUIRE(::listen(listen_fd_, 8) == 0);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~PieceBroker() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    {
      std::lock_guard lock(mutex_);
      for (const int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : conns_) t.join();
    for (const int fd : fds_) ::close(fd);
  }
  int port() const { return port_; }
  int pieces() const { return pieces_; }
  int metadataAnswers() const { return metadata_answers_; }

 private:
  void acceptLoop() {
    for (;;) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard lock(mutex_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      fds_.push_back(fd);
      conns_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    for (;;) {
      std::uint8_t prefix[4];
      if (!readAll(fd, prefix, 4)) return;
      const std::size_t size = (std::size_t{prefix[0]} << 24) | (std::size_t{prefix[1]} << 16) |
                               (std::size_t{prefix[2]} << 8) | prefix[3];
      Bytes request(size);
      if (!readAll(fd, request.data(), size)) return;
      const auto api = static_cast<std::int16_t>((request[0] << 8) | request[1]);
      const auto correlation = static_cast<std::int32_t>(
          (std::uint32_t{request[4]} << 24) | (std::uint32_t{request[5]} << 16) |
          (std::uint32_t{request[6]} << 8) | request[7]);
      if (api == kMetadata) {
        ++metadata_answers_;
        writeInPieces(fd, metadataAnswer(correlation));
      } else if (api == kProduce) {
        writeInPieces(fd, produceAnswer(correlation));
      }  // Fetch: held, as a broker holds one with nothing new to give
    }
  }

  Bytes metadataAnswer(std::int32_t correlation) const {
    kafka::wire::FrameWriter w;
    w.int32(correlation);
    w.noTaggedFields();
    w.int32(0);  // throttle
    w.compactArrayLength(1);
    w.int32(1);
    w.compactString("127.0.0.1");
    w.int32(port_);
    w.uvarint(0);  // rack: null
    w.noTaggedFields();
    // A cluster id of 40,000 characters: an answer longer than the client's SO_RCVLOWAT cap.
    w.compactString(std::string(40'000, 'c'));
    w.int32(1);  // controller
    w.compactArrayLength(1);
    w.int16(0);
    w.compactString("t");
    for (int i = 0; i < 4; ++i) w.int32(0);  // topic id
    w.int8(0);
    w.compactArrayLength(1);
    w.int16(0);
    w.int32(0);  // partition
    w.int32(1);  // leader
    w.int32(0);  // leader epoch
    w.compactArrayLength(1);
    w.int32(1);
    w.compactArrayLength(1);
    w.int32(1);
    w.compactArrayLength(0);
    w.noTaggedFields();
    w.int32(0);  // authorized operations
    w.noTaggedFields();
    w.noTaggedFields();
    return std::move(w).finish();
  }

  Bytes produceAnswer(std::int32_t correlation) {
    kafka::wire::FrameWriter w;
    w.int32(correlation);
    w.noTaggedFields();
    w.compactArrayLength(1);
    w.compactString("t");
    w.compactArrayLength(1);
    w.int32(0);
    w.int16(0);
    w.int64(next_offset_++);
    w.int64(-1);  // log append time
    w.int64(0);   // log start offset
    w.compactArrayLength(0);
    w.uvarint(0);  // error message: null
    w.noTaggedFields();
    w.noTaggedFields();
    w.int32(0);  // throttle
    w.noTaggedFields();
    return std::move(w).finish();
  }

  void writeInPieces(int fd, const Bytes& frame) {
    std::size_t at = 0;
    for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{5}}) {
      if (at >= frame.size()) break;
      piece = std::min(piece, frame.size() - at);
      if (::send(fd, frame.data() + at, piece, MSG_NOSIGNAL) != static_cast<ssize_t>(piece)) return;
      at += piece;
      ++pieces_;
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    while (at < frame.size()) {
      const auto piece = std::min<std::size_t>(16 << 10, frame.size() - at);
      if (::send(fd, frame.data() + at, piece, MSG_NOSIGNAL) != static_cast<ssize_t>(piece)) return;
      at += piece;
      ++pieces_;
      if (at < frame.size()) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<int> fds_;
  std::vector<std::thread> conns_;
  std::atomic<int> pieces_{0};
  std::atomic<int> metadata_answers_{0};
  std::int64_t next_offset_ = 100;  // one produce connection
};

}  // namespace

TEST_CASE(
    "the wire client reads answers that arrive in pieces, and ticks on its I/O thread until "
    "told to stop",
    "[integration][probe]") {
  PieceBroker broker;
  common::SystemClock clock;
  probe::WireClientOptions options;
  options.bootstrap = {{"127.0.0.1", std::to_string(broker.port())}};

  std::mutex mutex;
  std::vector<probe::WireAck> acks;
  std::thread::id ack_thread;
  probe::WireClient client(
      options, clock,
      [&](std::span<const probe::WireAck> got, common::Instant) {
        std::lock_guard lock(mutex);
        ack_thread = std::this_thread::get_id();
        acks.insert(acks.end(), got.begin(), got.end());
      },
      [](std::span<const probe::WireRecord>, common::Instant) {});
  client.start({probe::WireTarget{"t", 0, 0, 0}}, std::chrono::seconds(10));
  // The metadata answer (40 KB, in six pieces) was read: start() waited for t[0]'s leader.
  REQUIRE(broker.metadataAnswers() >= 1);
  CHECK(client.stats().problem.empty());

  constexpr std::int64_t kIntervalUs = 20'000;
  constexpr int kTicks = 10;
  std::atomic<int> ticks{0};
  std::thread::id tick_thread;
  std::vector<std::int64_t> lateness_us;
  const auto first = clock.monoNow() + kIntervalUs;
  client.tickOnIoThread(
      [&](std::vector<probe::WireSend>& out) -> common::MonoMicros {
        const int k = ticks.load();
        {
          std::lock_guard lock(mutex);
          tick_thread = std::this_thread::get_id();
          lateness_us.push_back(clock.monoNow() - (first + k * kIntervalUs));
        }
        if (k < kTicks) {
          probe::WireSend send;
          send.slot = 0;
          send.seq = k + 1;
          send.value = {'p', 'r', 'o', 'b', 'e'};
          send.timestamp_ms = clock.wallNow() / 1000;
          out.push_back(std::move(send));
        }
        ticks = k + 1;
        return first + (k + 1) * kIntervalUs;
      },
      first);

  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (acks.size() >= kTicks) break;
    }
    REQUIRE(std::chrono::steady_clock::now() < until);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  client.stopTicking();
  const int ticked = ticks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(ticks.load() == ticked);  // none after stopTicking() returned

  std::lock_guard lock(mutex);
  REQUIRE(acks.size() == kTicks);
  for (int k = 0; k < kTicks; ++k) {
    INFO("message " << k + 1);
    CHECK(acks[static_cast<std::size_t>(k)].seq == k + 1);
    CHECK(acks[static_cast<std::size_t>(k)].error == 0);
    REQUIRE(acks[static_cast<std::size_t>(k)].offset.has_value());
    CHECK(*acks[static_cast<std::size_t>(k)].offset == 100 + k);
  }
  CHECK(tick_thread == ack_thread);  // the I/O thread, which also read the answers
  CHECK(tick_thread != std::this_thread::get_id());
  for (const auto late : lateness_us) CHECK(late >= 0);  // never before its time
  // Every answer went in pieces: at least four for each produce answer.
  CHECK(broker.pieces() >= 4 * kTicks);
  client.stop();
}

}  // namespace wire_client_pieces_test
