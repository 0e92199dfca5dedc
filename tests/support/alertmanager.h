#pragma once

// A real Prometheus Alertmanager (Debian's prometheus-alertmanager, 0.25) for tests: started on a
// free loopback port with its own configuration (one receiver that sends nowhere, no clustering)
// and storage directory under a TempDir, stopped (SIGTERM) by the destructor.
//
//   Alertmanager am;                                  // throws if it cannot start within 30 s
//   receiver url: am.url()                            // "http://127.0.0.1:<port>"
//   auto alerts = am.alerts();                        // GET /api/v2/alerts, parsed
//   am.waitForAlert("KfaildDrillFailed", 20s)         // the first alert with that alertname
//   am.silence(id)                                    // GET /api/v2/silences, the one with that id
//
// Used by tests/notify/alertmanager_test.cc and meant for the lab e2e that ties a real failing
// drill to it. Its log is in logFile() (kept with KFAILD_KEEP_TEST_DIRS=1).

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace kfaild::testing {

// Where the binary is: $KFAILD_ALERTMANAGER, else /usr/bin/prometheus-alertmanager, else
// alertmanager on PATH; empty when none is found.
std::string alertmanagerBinary();

class Alertmanager {
 public:
  Alertmanager();
  ~Alertmanager();
  Alertmanager(const Alertmanager&) = delete;
  Alertmanager& operator=(const Alertmanager&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string logFile() const { return (dir_ / "alertmanager.log").string(); }

  // GET /api/v2/alerts (active, silenced and inhibited alike) as Alertmanager returns it.
  nlohmann::json alerts() const;
  // GET /api/v2/silences (active, pending and expired) as Alertmanager returns it.
  nlohmann::json silences() const;
  // The silence with that id, if Alertmanager knows it.
  std::optional<nlohmann::json> silence(const std::string& id) const;
  // The first alert whose labels.alertname is `alertname`, once Alertmanager lists it.
  std::optional<nlohmann::json> waitForAlert(const std::string& alertname,
                                             std::chrono::milliseconds timeout) const;

 private:
  TempDir dir_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace kfaild::testing
