#pragma once

// A thin RAII layer over librdkafka handles. Everything kfaild does with Kafka goes through
// rd_kafka_t handles created here, so configuration, logging and error mapping live in one place.
//
// Log capture: librdkafka calls the log sink from its own threads (log.queue is off), so a sink
// must be thread-safe and quick. The sink outlives the handle (the caller guarantees it).

#include <librdkafka/rdkafka.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "server/common/result.h"

namespace kfaild::kafka {

// (client name as librdkafka reports it, e.g. "kfaild-lab#producer-1", syslog level, facility,
// message)
using LogSink = std::function<void(std::string_view client, int level, std::string_view fac,
                                   std::string_view msg)>;

struct ClientOptions {
  std::string bootstrap;
  std::map<std::string, std::string> properties;  // passed through to librdkafka
  std::string client_id = "kfaild";
  std::string debug;  // librdkafka debug contexts, empty for none
  LogSink log;        // empty: librdkafka's warnings and errors go to spdlog
};

// Destroys a handle with `flags` (rd_kafka_destroy_flags): RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE
// for a consumer that never joined its group.
struct HandleDeleter {
  int flags = 0;
  void operator()(rd_kafka_t* rk) const;
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;

// Creates a producer or consumer handle from the options plus `extra` (kfaild's own settings,
// which win over the user's). `customize` may install further callbacks (delivery reports) on
// the configuration before the handle is created. Errors name the refused property.
Result<Handle> createClient(rd_kafka_type_t type, const ClientOptions& options,
                            const std::map<std::string, std::string>& extra = {},
                            const std::function<void(rd_kafka_conf_t*)>& customize = {});

// Gives every live handle created with `bootstrap` its bootstrap servers again
// (rd_kafka_brokers_add: a server it still knows is left as it is). librdkafka 2.14.2 removes every
// broker a Metadata response does not list, and a broker that has just started (or is shutting
// down) can answer one that lists none while every broker is fenced: the handle is then left with
// no broker to ask until its own re-bootstrap, which was seen to take over 4 minutes (the probe
// and the poller blind after `lab down` and `lab up`). The metadata poller calls this when the
// metadata it got named no broker. The number of handles given them.
int addBootstrapAgain(const std::string& bootstrap);

// One handle created on first use and shared by several parts of kfaild (librdkafka's handles are
// thread-safe): the metadata poller and the drill engine's admin calls use one observer client
// instead of one each. get() is thread-safe; the handle lives as long as this object, which must
// outlive every caller of get().
class SharedHandle {
 public:
  SharedHandle(rd_kafka_type_t type, ClientOptions options,
               std::map<std::string, std::string> extra = {})
      : type_(type), options_(std::move(options)), extra_(std::move(extra)) {}
  SharedHandle(const SharedHandle&) = delete;
  SharedHandle& operator=(const SharedHandle&) = delete;

  // The handle, created now if it is not yet; errors name a refused property. A failed creation
  // is tried again on the next call.
  [[nodiscard]] Result<rd_kafka_t*> get();

 private:
  rd_kafka_type_t type_;
  ClientOptions options_;
  std::map<std::string, std::string> extra_;
  std::mutex mutex_;
  Handle handle_;  // guarded by mutex_ until created
};

// Whether librdkafka accepts every property (known name, valid value), without creating a
// client. Errors name the refused property.
Status checkClientProperties(const std::map<std::string, std::string>& properties);

// The librdkafka version string the process runs with ("2.14.2").
std::string librdkafkaVersion();

}  // namespace kfaild::kafka
