#include "api/prometheus_text.h"

#include <charconv>
#include <cmath>

namespace kfaild::api {

std::string PrometheusText::escapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  // HELP text escapes only backslash and line feed.
  for (const char c : help) {
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_.push_back(c);
    }
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusText::head(std::string_view name, const Labels& labels) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [key, value] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += key;
      out_ += "=\"";
      out_ += escapeLabelValue(value);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, std::uint64_t value) {
  head(name, labels);
  out_ += std::to_string(value);
  out_ += '\n';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, std::int64_t value) {
  head(name, labels);
  out_ += std::to_string(value);
  out_ += '\n';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, double value) {
  head(name, labels);
  if (std::isnan(value)) {
    out_ += "NaN";
  } else if (std::isinf(value)) {
    out_ += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buffer[64];
    const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, ec == std::errc{} ? ptr : buffer);
  }
  out_ += '\n';
}

}  // namespace kfaild::api
