#pragma once

// A real Prometheus (Debian's `prometheus`, 2.42) for the tests: a configuration of its own in a
// temporary directory scraping the given targets as job "kfaild" every second, its TSDB there too,
// listening on a free loopback port. Queries go through its HTTP API (/api/v1/query, /targets).
// The destructor stops it (SIGTERM, then SIGKILL).
//
// Also what the PromQL of deploy/ needs to be evaluated outside Grafana: the expressions of the
// dashboard's panel targets and of the rules file, with Grafana's variables given concrete values.
//
// Not thread-safe; one test thread.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/http_client.h"
#include "tests/support/process.h"

namespace kfaild::testing {

// A loopback port nothing listens on right now (the kernel's pick; free again once closed).
inline std::uint16_t freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t length = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Query-string escaping for a PromQL expression (RFC 3986 unreserved characters kept).
inline std::string urlEncoded(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// `name` found on PATH (ChildProcess execs a path, without a search); "" when it is not there.
inline std::string onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

class PrometheusServer {
 public:
  struct Options {
    std::vector<std::string> targets;     // host:port of each kfaild, scraped as job "kfaild"
    std::vector<std::string> rule_files;  // loaded as rule_files (absolute paths)
    std::string scrape_interval = "1s";
  };

  PrometheusServer(const Options& options, const std::filesystem::path& dir)
      : port_(freeLoopbackPort()), dir_(dir) {
    std::filesystem::create_directories(dir_ / "tsdb");
    YAML::Emitter config;
    config << YAML::BeginMap;
    config << YAML::Key << "global" << YAML::Value << YAML::BeginMap << YAML::Key
           << "scrape_interval" << YAML::Value << options.scrape_interval << YAML::Key
           << "evaluation_interval" << YAML::Value << options.scrape_interval << YAML::EndMap;
    config << YAML::Key << "rule_files" << YAML::Value << YAML::BeginSeq;
    for (const auto& file : options.rule_files) config << file;
    config << YAML::EndSeq;
    config << YAML::Key << "scrape_configs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap
           << YAML::Key << "job_name" << YAML::Value << "kfaild" << YAML::Key << "static_configs"
           << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "targets"
           << YAML::Value << YAML::Flow << options.targets << YAML::EndMap << YAML::EndSeq
           << YAML::EndMap << YAML::EndSeq;
    config << YAML::EndMap;
    std::ofstream(dir_ / "prometheus.yml") << config.c_str() << "\n";
    log_ = (dir_ / "prometheus.log").string();
    const auto binary = onPath("prometheus");
    REQUIRE_FALSE(binary.empty());  // Debian's prometheus package (scripts/setup installs it)
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary, "--config.file=" + (dir_ / "prometheus.yml").string(),
                                 "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--storage.tsdb.retention.time=1d"},
        log_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && process_->running()) {
      try {
        if (api::testing::httpGet(port_, "/-/ready").status == 200) return;
      } catch (const std::exception&) {
        // Not listening yet.
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    INFO("prometheus log:\n" << logText());
    FAIL("prometheus did not become ready on port " << port_);
  }

  ~PrometheusServer() {
    if (process_) process_->stop(SIGTERM, 10'000);
  }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  std::uint16_t port() const { return port_; }

  std::string logText() const {
    std::ifstream in(log_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  // GET /api/v1/query at the server's now: the whole answer (status, data, error, warnings).
  nlohmann::json query(const std::string& promql) const {
    const auto reply = api::testing::httpGet(port_, "/api/v1/query?query=" + urlEncoded(promql));
    auto body = nlohmann::json::parse(reply.body, nullptr, false);
    if (body.is_discarded()) return {{"status", "error"}, {"error", "not JSON: " + reply.body}};
    return body;
  }

  // The health of the scrape targets of job "kfaild" ("up", "down", "unknown"), by scrape URL.
  std::map<std::string, std::string> targetHealth() const {
    const auto body = api::testing::httpGet(port_, "/api/v1/targets?state=active").json();
    std::map<std::string, std::string> out;
    for (const auto& t : body["data"]["activeTargets"]) {
      if (t["labels"]["job"] == "kfaild")
        out[t["scrapeUrl"].get<std::string>()] = t["health"].get<std::string>();
    }
    return out;
  }

 private:
  std::uint16_t port_;
  std::filesystem::path dir_;
  std::string log_;
  std::unique_ptr<ChildProcess> process_;
};

// A PromQL expression found in a deploy file, and where.
struct FoundExpression {
  std::string where;  // "dashboard panel 'Open ack gap per partition' A", "rule KfaildDown"
  std::string expr;
};

// Every target `expr` of the Grafana dashboard's panels (rows' nested panels too).
inline std::vector<FoundExpression> dashboardExpressions(const nlohmann::json& dashboard) {
  std::vector<FoundExpression> out;
  std::vector<const nlohmann::json*> panels;
  for (const auto& p : dashboard.at("panels")) {
    panels.push_back(&p);
    if (p.contains("panels")) {
      for (const auto& nested : p["panels"]) panels.push_back(&nested);
    }
  }
  for (const auto* p : panels) {
    if (!p->contains("targets")) continue;
    for (const auto& t : (*p)["targets"]) {
      if (!t.contains("expr")) continue;
      out.push_back(
          {"dashboard panel '" + (*p)["title"].get<std::string>() + "' " + t.value("refId", ""),
           t["expr"].get<std::string>()});
    }
  }
  return out;
}

// Every recording and alerting rule's expr of a Prometheus rules file.
inline std::vector<FoundExpression> ruleExpressions(const std::string& rules_file) {
  std::vector<FoundExpression> out;
  const auto root = YAML::LoadFile(rules_file);
  for (const auto& group : root["groups"]) {
    for (const auto& rule : group["rules"]) {
      const auto name = rule["alert"] ? "alert " + rule["alert"].as<std::string>()
                                      : "record " + rule["record"].as<std::string>();
      out.push_back({name, rule["expr"].as<std::string>()});
    }
  }
  return out;
}

// `expr` with Grafana's variables replaced by values Prometheus accepts: the given ones (name
// without `$`), then Grafana's built-in intervals.
inline std::string withGrafanaVariables(std::string expr,
                                        const std::map<std::string, std::string>& values) {
  std::map<std::string, std::string> all = {
      {"__rate_interval", "1m"}, {"__interval", "15s"}, {"__range", "1h"}};
  for (const auto& [name, value] : values) all[name] = value;
  // Longest names first, so $__rate_interval is not taken for $__range or a prefix of it.
  std::vector<std::pair<std::string, std::string>> ordered(all.begin(), all.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [name, value] : ordered) {
    for (const auto& pattern : {"${" + name + "}", "$" + name}) {
      for (auto at = expr.find(pattern); at != std::string::npos;
           at = expr.find(pattern, at + value.size())) {
        expr.replace(at, pattern.size(), value);
      }
    }
  }
  return expr;
}

}  // namespace kfaild::testing
