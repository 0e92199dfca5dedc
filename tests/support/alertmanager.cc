#include "tests/support/alertmanager.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace kfaild::testing {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using Tcp = asio::ip::tcp;

std::uint16_t freePort() {
  asio::io_context ioc;
  Tcp::acceptor acceptor(ioc, Tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

// One GET on a fresh connection; nullopt when nothing answers.
std::optional<std::pair<int, std::string>> get(std::uint16_t port, const std::string& target) {
  try {
    asio::io_context ioc;
    Tcp::socket socket(ioc);
    socket.connect(Tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    http::request<http::empty_body> request{http::verb::get, target, 11};
    request.set(http::field::host, "127.0.0.1");
    http::write(socket, request);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(socket, buffer, response);
    return std::pair{static_cast<int>(response.result_int()), response.body()};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string alertmanagerBinary() {
  if (const char* given = std::getenv("KFAILD_ALERTMANAGER"); given != nullptr && *given != '\0')
    return given;
  for (const char* candidate : {"/usr/bin/prometheus-alertmanager", "/usr/local/bin/alertmanager",
                                "/usr/bin/alertmanager"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return "";
}

Alertmanager::Alertmanager() {
  const auto binary = alertmanagerBinary();
  if (binary.empty()) {
    throw std::runtime_error(
        "no Alertmanager binary (install prometheus-alertmanager: scripts/setup does)");
  }
  {
    std::ofstream config(dir_ / "alertmanager.yml");
    config << "route:\n  receiver: nowhere\n  group_wait: 1s\nreceivers:\n  - name: nowhere\n";
  }
  std::filesystem::create_directories(dir_ / "data");
  port_ = freePort();
  process_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{binary, "--config.file=" + (dir_ / "alertmanager.yml").string(),
                               "--storage.path=" + (dir_ / "data").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                               "--cluster.listen-address=", "--log.level=info"},
      logFile());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_->running()) break;
    if (auto ready = get(port_, "/-/ready"); ready && ready->first == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::ifstream log(logFile());
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  throw std::runtime_error("Alertmanager did not become ready on port " + std::to_string(port_) +
                           ": " + text);
}

Alertmanager::~Alertmanager() {
  if (process_ && process_->stop(SIGTERM, 10000) == -1) process_->stop(SIGKILL, 5000);
}

nlohmann::json Alertmanager::alerts() const {
  auto answer = get(port_, "/api/v2/alerts");
  if (!answer || answer->first != 200) throw std::runtime_error("GET /api/v2/alerts failed");
  return nlohmann::json::parse(answer->second);
}

nlohmann::json Alertmanager::silences() const {
  auto answer = get(port_, "/api/v2/silences");
  if (!answer || answer->first != 200) throw std::runtime_error("GET /api/v2/silences failed");
  return nlohmann::json::parse(answer->second);
}

std::optional<nlohmann::json> Alertmanager::silence(const std::string& id) const {
  for (const auto& s : silences()) {
    if (s.value("id", std::string()) == id) return s;
  }
  return std::nullopt;
}

std::optional<nlohmann::json> Alertmanager::waitForAlert(const std::string& alertname,
                                                         std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    for (const auto& alert : alerts()) {
      if (alert.contains("labels") &&
          alert["labels"].value("alertname", std::string()) == alertname)
        return alert;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  return std::nullopt;
}

}  // namespace kfaild::testing
