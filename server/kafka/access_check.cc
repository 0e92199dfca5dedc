#include "server/kafka/access_check.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "server/kafka/quorum.h"
#include "server/kafka/security.h"

namespace kfaild::kafka {
namespace {

// Filled by librdkafka's error callback (served by rd_kafka_poll), emptied by the check.
struct SeenErrors {
  std::mutex mutex;
  std::vector<std::pair<rd_kafka_resp_err_t, std::string>> errors;  // guarded by mutex

  std::vector<std::pair<rd_kafka_resp_err_t, std::string>> take() {
    std::lock_guard lock(mutex);
    return std::exchange(errors, {});
  }
};

void onError(rd_kafka_t* /*rk*/, int err, const char* reason, void* opaque) {
  auto* seen = static_cast<SeenErrors*>(opaque);
  std::lock_guard lock(seen->mutex);
  seen->errors.emplace_back(static_cast<rd_kafka_resp_err_t>(err), reason == nullptr ? "" : reason);
}

// librdkafka logs every failed connection itself; the check reports its one conclusion instead.
void quiet(const rd_kafka_t* /*rk*/, int /*level*/, const char* /*fac*/, const char* /*buf*/) {}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

AccessCheck refused(std::string key, std::string reason) {
  return {AccessCheck::Outcome::kRefused, std::move(key), oneLine(std::move(reason))};
}

}  // namespace

std::string refusedKey(bool ssl, const std::string& reason) {
  if (ssl || contains(reason, "SSL") || contains(reason, "certificate")) {
    if (contains(reason, "hostname mismatch") || contains(reason, "Hostname mismatch") ||
        contains(reason, "IP address mismatch")) {
      return "ssl.endpoint.identification.algorithm";
    }
    if (contains(reason, "certificate verify failed") ||
        contains(reason, "could not be verified")) {
      return "ssl.ca.location";
    }
    if (contains(reason, "certificate required") || contains(reason, "bad certificate") ||
        contains(reason, "unknown ca") || contains(reason, "handshake failure")) {
      return "ssl.certificate.location";
    }
    return "security.protocol";
  }
  if (contains(reason, "mechanism") && !contains(reason, "invalid credentials"))
    return "sasl.mechanism";
  return "sasl.password";
}

AccessCheck checkClusterAccess(const std::string& bootstrap,
                               const std::map<std::string, std::string>& client, int timeout_ms) {
  // A SASL protocol without a mechanism would make librdkafka try Kerberos (its default, GSSAPI):
  // never what a configuration that forgot the key meant.
  if (auto security = clientSecurity(client); !security) {
    const auto& message = security.error().message;
    const auto colon = message.find(": ");
    const auto key = message.substr(0, colon);
    if (key == "sasl.mechanism" && !client.contains("sasl.mechanism") &&
        !client.contains("sasl.mechanisms")) {
      return refused(key, message.substr(colon + 2));
    }
  } else if (security->tls()) {
    // What the own protocol client reads (CA, certificate, key) must be usable too.
    const auto transport = quorumTransport(client);
    if (!transport.security) {
      const auto colon = transport.problem.find(": ");
      return refused(transport.problem.substr(0, colon), transport.problem.substr(colon + 2));
    }
  }

  SeenErrors seen;
  std::unique_ptr<rd_kafka_conf_t, void (*)(rd_kafka_conf_t*)> conf(rd_kafka_conf_new(),
                                                                    rd_kafka_conf_destroy);
  char errstr[512];
  std::map<std::string, std::string> all = client;
  all["bootstrap.servers"] = bootstrap;
  all["client.id"] = "kfaild-start-check";
  // One attempt per broker is what the check needs; librdkafka's backoff would only add waiting.
  all["reconnect.backoff.ms"] = "100";
  for (const auto& [key, value] : all) {
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      return refused(key, errstr);
    }
  }
  rd_kafka_conf_set_error_cb(conf.get(), onError);
  rd_kafka_conf_set_log_cb(conf.get(), quiet);
  rd_kafka_conf_set_opaque(conf.get(), &seen);
  rd_kafka_t* raw = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr);
  if (raw == nullptr) {
    const std::string reason = errstr;
    return refused(contains(reason, "SASL") || contains(reason, "sasl") ? "sasl.mechanism"
                                                                        : "security.protocol",
                   reason);
  }
  conf.release();  // rd_kafka_new took it
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> rk(raw, rd_kafka_destroy);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last_failure = "no answer within " + std::to_string(timeout_ms) + " ms";
  bool all_down = false;
  while (std::chrono::steady_clock::now() < deadline) {
    const rd_kafka_metadata_t* metadata = nullptr;
    if (rd_kafka_metadata(rk.get(), 0, nullptr, &metadata, 250) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_metadata_destroy(metadata);
      return {};
    }
    rd_kafka_poll(rk.get(), 0);
    for (const auto& [err, reason] : seen.take()) {
      if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL) {
        return refused(refusedKey(err == RD_KAFKA_RESP_ERR__SSL, reason), reason);
      }
      if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        all_down = true;
      } else if (contains(reason, "SSL") && contains(reason, "alert")) {
        // With TLS 1.3 a broker's refusal of the client certificate arrives after the handshake,
        // as a transport error carrying the TLS alert.
        return refused(refusedKey(true, reason), reason);
      } else {
        last_failure = reason;
      }
    }
    // Every broker failed without an authentication or TLS error: asked once more (a refusal
    // may be reported just after), then taken for down.
    if (all_down) {
      rd_kafka_poll(rk.get(), 250);
      for (const auto& [err, reason] : seen.take()) {
        if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL) {
          return refused(refusedKey(err == RD_KAFKA_RESP_ERR__SSL, reason), reason);
        }
      }
      return {AccessCheck::Outcome::kUnreachable, "", oneLine(last_failure)};
    }
  }
  return {AccessCheck::Outcome::kUnreachable, "", oneLine(last_failure)};
}

}  // namespace kfaild::kafka
