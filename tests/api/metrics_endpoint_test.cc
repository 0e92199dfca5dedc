// /metrics with every optional part attached (drills, retention, notifications, maintenance,
// build info) and a cluster whose control-plane and coordinator probes run: the order of the
// families, and the families no other test reads.

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "api/endpoints.h"
#include "api/router.h"
#include "server/maintenance/maintenance_windows.h"
#include "storage/maintenance_store.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/api/api_test_support.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace kfaild::api::metrics_endpoint_test {
namespace {

using testing::kNow;

class FixedRetention final : public storage::RetentionStatus {
 public:
  storage::RetentionReport retentionReport() const override {
    storage::RetentionReport report;
    report.pruned_samples = 10;
    report.pruned_drill_samples = 2;
    report.pruned_gaps = 3;
    report.pruned_events = 4;
    report.passes = 5;
    report.failures = 1;
    report.last_success_us = kNow - 1'500'000;
    report.max_bytes = 1 << 30;
    return report;
  }
};

class FixedNotifications final : public notify::NotificationStatus {
 public:
  notify::NotificationMetrics notificationMetrics() const override {
    notify::NotificationMetrics metrics;
    metrics.outcomes = {{"ops", "drill_finished", "delivered", 2}};
    metrics.attempts = {{"ops", "ok", 2}, {"ops", "error", 1}};
    metrics.queued = {{"ops", 1}};
    metrics.delivery_seconds_sum = 0.5;
    metrics.delivery_seconds_count = 2;
    return metrics;
  }
};

probe::OperationStatus operations(std::uint64_t ops, std::uint64_t failures, common::Instant now,
                                  std::int64_t age_us, std::int64_t longest_gap_us) {
  probe::OperationStatus status;
  status.ops = ops;
  status.failures = failures;
  status.last_ok = common::Instant{now.wall - age_us, now.mono - age_us};
  status.longest_gap_us = longest_gap_us;
  return status;
}

// Every part of /metrics attached, the endpoints on a router (no HTTP server: the scrape is
// dispatched directly).
class FullMetrics {
 public:
  FullMetrics() : clock_(kNow, 5'000'000'000) {
    storage::SqliteStoreOptions store_options;
    store_options.clock = &clock_;
    const auto path = (dir_ / "kfaild.db").string();
    auto store = storage::SqliteStore::open(path, store_options);
    REQUIRE(store.ok());
    store_ = std::move(*store);
    auto drills = storage::SqliteDrillStore::open(path);
    REQUIRE(drills.ok());
    drills_ = std::move(*drills);
    auto maintenance_store = storage::MaintenanceStore::open(path);
    REQUIRE(maintenance_store.ok());
    maintenance_store_ = std::move(*maintenance_store);
    windows_ = std::make_unique<maintenance::MaintenanceWindows>(
        *maintenance_store_, clock_, std::vector<std::unique_ptr<maintenance::AlertSilences>>{},
        config::RetryConfig{});
    lab_ = *store_->ensureCluster("lab", "127.0.0.1:19091");
    auto lab = testing::labCluster(lab_, clock_);
    const auto now = clock_.now();
    probe::ControlStatus control;
    static_cast<probe::OperationStatus&>(control) = operations(40, 3, now, 1'200'000, 7'000'000);
    control.leader_changes = 2;
    lab.probe.control = control;
    probe::CoordinatorStatus coordinators;
    coordinators.commits = operations(30, 1, now, 400'000, 6'500'000);
    coordinators.transactions = operations(20, 2, now, 900'000, 8'000'000);
    lab.probe.coordinators = coordinators;
    lab.probe.partitions[0].receive_intervals.add(30'000);
    live_.set({lab});

    endpoints_ = std::make_unique<Endpoints>(live_, *store_, clock_);
    endpoints_->setDrillStore(drills_.get());
    endpoints_->setRetentionStatus(&retention_);
    endpoints_->setNotificationStatus(&notifications_);
    endpoints_->setMaintenance(windows_.get());
    endpoints_->setBuildInfo({"1.2.3", "abc1234", "2.6.0"});
    endpoints_->registerOn(router_);
  }

  testing::FixedLiveClusters& live() { return live_; }

  std::string scrape() {
    const auto target = parseTarget("/metrics");
    REQUIRE(target.ok());
    Request request;
    request.method = "GET";
    request.path = target->path;
    request.segments = target->segments;
    const auto response = router_.dispatch(request);
    REQUIRE(response.status == 200);
    return response.body;
  }

 private:
  kfaild::testing::TempDir dir_;
  kfaild::testing::ManualClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<storage::SqliteDrillStore> drills_;
  std::unique_ptr<storage::MaintenanceStore> maintenance_store_;
  std::unique_ptr<maintenance::MaintenanceWindows> windows_;
  FixedRetention retention_;
  FixedNotifications notifications_;
  storage::ClusterId lab_ = 0;
  testing::FixedLiveClusters live_;
  Router router_;
  std::unique_ptr<Endpoints> endpoints_;
};

std::vector<std::string> familyOrder(const std::string& text) {
  std::vector<std::string> families;
  const std::string type = "# TYPE ";
  for (auto at = text.find(type); at != std::string::npos; at = text.find(type, at + 1)) {
    const auto start = at + type.size();
    families.push_back(text.substr(start, text.find(' ', start) - start));
  }
  return families;
}

TEST_CASE("metrics list their families in a fixed order, each optional part where it belongs",
          "[integration][api]") {
  FullMetrics metrics;
  const std::vector<std::string> expected = {
      "kfaild_probe_sent_total",
      "kfaild_probe_acked_total",
      "kfaild_probe_received_total",
      "kfaild_probe_send_failed_total",
      "kfaild_probe_lost_total",
      "kfaild_probe_duplicated_total",
      "kfaild_probe_reordered_total",
      "kfaild_probe_gaps_total",
      "kfaild_probe_held_ticks_total",
      "kfaild_probe_in_flight",
      "kfaild_probe_outstanding",
      "kfaild_probe_oldest_outstanding_age_seconds",
      "kfaild_probe_holding",
      "kfaild_probe_current_ack_gap_seconds",
      "kfaild_probe_current_receive_gap_seconds",
      "kfaild_probe_longest_ack_gap_seconds",
      "kfaild_probe_longest_receive_gap_seconds",
      "kfaild_probe_ack_interval_seconds",
      "kfaild_probe_receive_interval_seconds",
      "kfaild_probe_ack_latency_seconds",
      "kfaild_probe_end_to_end_latency_seconds",
      "kfaild_probe_ticks_total",
      "kfaild_probe_skipped_ticks_total",
      "kfaild_probe_client_recreations_total",
      "kfaild_probe_max_send_lateness_seconds",
      "kfaild_control_operations_total",
      "kfaild_control_failures_total",
      "kfaild_control_current_gap_seconds",
      "kfaild_control_longest_gap_seconds",
      "kfaild_coordinator_operations_total",
      "kfaild_coordinator_failures_total",
      "kfaild_coordinator_current_gap_seconds",
      "kfaild_coordinator_longest_gap_seconds",
      "kfaild_quorum_leader_changes_total",
      "kfaild_drills",
      "kfaild_last_drill_verdict",
      "kfaild_last_drill_id",
      "kfaild_last_drill_timestamp_seconds",
      "kfaild_drill_last_done_timestamp_seconds",
      "kfaild_last_drill_regressed",
      "kfaild_last_drill_ack_stall_seconds",
      "kfaild_last_drill_receive_stall_seconds",
      "kfaild_last_drill_phase_seconds",
      "kfaild_last_drill_messages",
      "kfaild_probe_probing",
      "kfaild_cluster_reachable",
      "kfaild_cluster_brokers",
      "kfaild_store_queued_records",
      "kfaild_store_written_total",
      "kfaild_store_dropped_samples_total",
      "kfaild_store_dropped_other_total",
      "kfaild_store_failed_batches_total",
      "kfaild_storage_database_bytes",
      "kfaild_storage_used_bytes",
      "kfaild_storage_max_bytes",
      "kfaild_storage_pruned_rows_total",
      "kfaild_storage_retention_passes_total",
      "kfaild_storage_prune_failures_total",
      "kfaild_storage_last_prune_timestamp_seconds",
      "kfaild_notifications_total",
      "kfaild_notification_attempts_total",
      "kfaild_notifications_queued",
      "kfaild_notification_delivery_seconds",
      "kfaild_maintenance_active",
      "kfaild_build_info",
      "kfaild_http_requests_total",
  };
  const auto text = metrics.scrape();
  INFO(text);
  CHECK(familyOrder(text) == expected);
}

TEST_CASE(
    "metrics report the control-plane and coordinator probes, the quorum's leader changes "
    "and whether each probe probes",
    "[integration][api]") {
  FullMetrics metrics;
  const auto text = metrics.scrape();
  const std::vector<std::string> expected = {
      "# HELP kfaild_control_operations_total Control-plane probe operations (a validate-only "
      "CreateTopics only the active controller answers).",
      "# TYPE kfaild_control_operations_total counter",
      R"(kfaild_control_operations_total{cluster="lab"} 40)",
      R"(kfaild_control_failures_total{cluster="lab"} 3)",
      R"(kfaild_control_current_gap_seconds{cluster="lab"} 1.2)",
      R"(kfaild_control_longest_gap_seconds{cluster="lab"} 7)",
      R"(kfaild_coordinator_operations_total{cluster="lab",stream="commit"} 30)",
      R"(kfaild_coordinator_operations_total{cluster="lab",stream="transaction"} 20)",
      R"(kfaild_coordinator_failures_total{cluster="lab",stream="transaction"} 2)",
      R"(kfaild_coordinator_current_gap_seconds{cluster="lab",stream="commit"} 0.4)",
      R"(kfaild_coordinator_longest_gap_seconds{cluster="lab",stream="transaction"} 8)",
      R"(kfaild_quorum_leader_changes_total{cluster="lab"} 2)",
      R"(kfaild_probe_probing{cluster="lab"} 1)",
      R"(kfaild_probe_in_flight{cluster="lab",topic="orders",partition="1"} 5)",
      R"(kfaild_probe_oldest_outstanding_age_seconds{cluster="lab",topic="orders",)"
      R"(partition="0"} 2)",
      R"(kfaild_probe_current_receive_gap_seconds{cluster="lab",topic="orders",partition="2"} 3)",
      R"(kfaild_probe_longest_receive_gap_seconds{cluster="lab",topic="orders",partition="0"} 9.9)",
      R"(kfaild_probe_receive_interval_seconds_count{cluster="lab",topic="orders",)"
      R"(partition="0"} 1)",
      R"(kfaild_build_info{version="1.2.3",commit="abc1234",librdkafka="2.6.0"} 1)",
  };
  for (const auto& line : expected) {
    INFO(line);
    CHECK(text.find(line + "\n") != std::string::npos);
  }
  // No outstanding message, no age: the family is there without partition 1's sample.
  CHECK(text.find(R"(kfaild_probe_oldest_outstanding_age_seconds{cluster="lab",topic="orders",)"
                  R"(partition="1"})") == std::string::npos);
}

TEST_CASE("each client profile's partitions are labelled with it, the primary's are not",
          "[integration][api]") {
  FullMetrics metrics;
  metrics.live().update([](std::vector<ClusterLive>& clusters) {
    auto java = clusters[0].probe;
    java.partitions.resize(1);
    java.partitions[0].counters.acked = 4242;
    clusters[0].profiles = {{"librdkafka", "librdkafka", clusters[0].probe},
                            {"java", "java", java}};
  });
  const auto text = metrics.scrape();
  CHECK(text.find(R"(kfaild_probe_acked_total{cluster="lab",topic="orders",partition="0",)"
                  R"(profile="java"} 4242)"
                  "\n") != std::string::npos);
  CHECK(text.find(R"(kfaild_probe_acked_total{cluster="lab",topic="orders",partition="0"} )") !=
        std::string::npos);
  CHECK(text.find(R"(profile="librdkafka")") == std::string::npos);
}

}  // namespace
}  // namespace kfaild::api::metrics_endpoint_test
