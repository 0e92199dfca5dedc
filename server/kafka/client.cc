#include "server/kafka/client.h"

#include <spdlog/spdlog.h>

#include "server/kafka/errc.h"

namespace kfaild::kafka {
namespace {

// The handle's opaque points at a heap copy of the log sink; HandleDeleter deletes it after
// rd_kafka_destroy, when librdkafka can no longer call it.
struct Hooks {
  LogSink log;
};

void logCallback(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  const auto* hooks = static_cast<const Hooks*>(rd_kafka_opaque(rk));
  if (hooks != nullptr && hooks->log) {
    hooks->log(rd_kafka_name(rk), level, fac, buf);
    return;
  }
  if (level <= 3) {
    spdlog::error("librdkafka {} {}: {}", rd_kafka_name(rk), fac, buf);
  } else if (level <= 4) {
    spdlog::warn("librdkafka {} {}: {}", rd_kafka_name(rk), fac, buf);
  } else {
    spdlog::debug("librdkafka {} {}: {}", rd_kafka_name(rk), fac, buf);
  }
}

}  // namespace

// Every live handle createClient made, with its bootstrap servers (addBootstrapAgain).
struct Registry {
  std::mutex mutex;
  std::map<rd_kafka_t*, std::string> bootstrap;  // guarded by mutex
};

Registry& registry() {
  static Registry r;
  return r;
}

void HandleDeleter::operator()(rd_kafka_t* rk) const {
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    r.bootstrap.erase(rk);
  }
  auto* hooks = static_cast<Hooks*>(rd_kafka_opaque(rk));
  rd_kafka_destroy_flags(rk, flags);
  delete hooks;
}

Status checkClientProperties(const std::map<std::string, std::string>& properties) {
  std::unique_ptr<rd_kafka_conf_t, void (*)(rd_kafka_conf_t*)> conf(rd_kafka_conf_new(),
                                                                    rd_kafka_conf_destroy);
  char errstr[512];
  for (const auto& [key, value] : properties) {
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      return kafkaError(errc::invalid_property, key + ": " + errstr);
    }
  }
  return okStatus();
}

Result<Handle> createClient(rd_kafka_type_t type, const ClientOptions& options,
                            const std::map<std::string, std::string>& extra,
                            const std::function<void(rd_kafka_conf_t*)>& customize) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  std::map<std::string, std::string> all = options.properties;
  all["bootstrap.servers"] = options.bootstrap;
  all["client.id"] = options.client_id;
  if (!options.debug.empty()) all["debug"] = options.debug;
  for (const auto& [key, value] : extra) all[key] = value;
  for (const auto& [key, value] : all) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return kafkaError(errc::invalid_property, key + ": " + errstr);
    }
  }
  rd_kafka_conf_set_log_cb(conf, logCallback);
  if (customize) customize(conf);
  auto* hooks = new Hooks{options.log};
  rd_kafka_conf_set_opaque(conf, hooks);
  // rd_kafka_new takes ownership of the conf only when it succeeds.
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    delete hooks;
    return kafkaError(errc::client_create_failed, errstr);
  }
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    r.bootstrap[rk] = options.bootstrap;
  }
  return Handle(rk);
}

int addBootstrapAgain(const std::string& bootstrap) {
  auto& r = registry();
  // Held while adding: a handle is taken out of the registry before it is destroyed.
  std::lock_guard lock(r.mutex);
  int handles = 0;
  for (const auto& [rk, servers] : r.bootstrap) {
    if (servers != bootstrap) continue;
    rd_kafka_brokers_add(rk, servers.c_str());
    ++handles;
  }
  return handles;
}

Result<rd_kafka_t*> SharedHandle::get() {
  std::lock_guard lock(mutex_);
  if (!handle_) {
    auto created = createClient(type_, options_, extra_);
    if (!created) return created.error();
    handle_ = std::move(*created);
  }
  return handle_.get();
}

std::string librdkafkaVersion() {
  return rd_kafka_version_str();
}

}  // namespace kfaild::kafka
