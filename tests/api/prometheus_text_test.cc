#include "api/prometheus_text.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace kfaild::api::prometheus_text_test {
namespace {

TEST_CASE("prometheus text has HELP and TYPE before a family's samples", "[unit][api]") {
  PrometheusText out;
  out.family("kfaild_probe_acked_total", "counter", "Acked.\nSecond line with a \\.");
  out.sample("kfaild_probe_acked_total", {{"cluster", "lab"}, {"partition", "0"}},
             std::uint64_t{18446744073709551615ULL});
  out.family("kfaild_probe_current_ack_gap_seconds", "gauge", "Gap.");
  out.sample("kfaild_probe_current_ack_gap_seconds", {}, 2.5);
  out.sample("kfaild_probe_current_ack_gap_seconds", {{"x", "y"}}, 1e-6);
  CHECK(out.text() ==
        "# HELP kfaild_probe_acked_total Acked.\\nSecond line with a \\\\.\n"
        "# TYPE kfaild_probe_acked_total counter\n"
        "kfaild_probe_acked_total{cluster=\"lab\",partition=\"0\"} 18446744073709551615\n"
        "# HELP kfaild_probe_current_ack_gap_seconds Gap.\n"
        "# TYPE kfaild_probe_current_ack_gap_seconds gauge\n"
        "kfaild_probe_current_ack_gap_seconds 2.5\n"
        "kfaild_probe_current_ack_gap_seconds{x=\"y\"} 1e-06\n");
}

TEST_CASE("label values are escaped so a name cannot break the exposition", "[unit][api]") {
  CHECK(PrometheusText::escapeLabelValue("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  PrometheusText out;
  out.family("m", "gauge", "h");
  out.sample("m", {{"cluster", "evil\"} 1\nfake_metric{"}}, std::int64_t{3});
  CHECK(out.text().find("m{cluster=\"evil\\\"} 1\\nfake_metric{\"} 3\n") != std::string::npos);
}

}  // namespace
}  // namespace kfaild::api::prometheus_text_test
