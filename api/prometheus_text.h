#pragma once

// Writes the Prometheus text exposition format 0.0.4. A family's HELP and TYPE come first and
// all its samples follow together, as the format requires; label values and help text are
// escaped, so a cluster or topic name cannot break the output.
//
// Not thread-safe; one writer per scrape.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kfaild::api {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

class PrometheusText {
 public:
  // `type`: "counter" or "gauge". Starts a family; the samples that follow belong to it.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, std::uint64_t value);
  void sample(std::string_view name, const Labels& labels, std::int64_t value);
  void sample(std::string_view name, const Labels& labels, double value);

  const std::string& text() const { return out_; }

  // Backslash, double quote and line feed escaped, as label values need.
  static std::string escapeLabelValue(std::string_view value);

 private:
  void head(std::string_view name, const Labels& labels);
  std::string out_;
};

}  // namespace kfaild::api
