#include "server/probe/control_probe.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/kafka/admin.h"
#include "server/kafka/rdkafka_ptr.h"

namespace kfaild::probe {
namespace {

// The metadata request after a failed check waits at most this long, so that stop() is not held.
constexpr int kRefreshTimeoutMs = 1000;
// Metadata requests before one check to move its route off a drill's target: each answer names a
// random live broker, so with three brokers eight leave it on the target one time in 6561.
constexpr int kSteerAttempts = 8;

storage::Event controlEvent(storage::ClusterId cluster, common::WallMicros at, const char* kind,
                            std::int32_t broker, nlohmann::json detail) {
  storage::Event e;
  e.cluster = cluster;
  e.t_us = at;
  e.source = common::toString(common::EventSource::kControl);
  e.kind = kind;
  if (broker >= 0) e.broker = broker;
  e.detail = common::jsonText(detail);
  return e;
}

// A voter is asked for at most this long in one watch: a leader that is frozen or blackholed
// must not hold the watch of the others for the operation timeout.
int voterTimeoutMs(const config::ControlProbeConfig& c) {
  return static_cast<int>(std::clamp<std::int64_t>(c.interval_us / 1000, 200, 1000));
}

}  // namespace

OperationLedger::OperationLedger(storage::ClusterId cluster, std::string_view stream,
                                 std::int64_t interval_us, std::int64_t gap_threshold_us)
    : cluster_(cluster), stream_(stream), gap_threshold_us_(gap_threshold_us) {
  status_.interval_us = interval_us;
}

void OperationLedger::record(common::Instant sent, common::Instant done, std::int32_t error,
                             const std::string& why, ControlOutput& out) {
  const auto seq = next_seq_++;
  ++status_.ops;
  storage::ProbeSample sample;
  sample.cluster = cluster_;
  sample.topic = stream_;
  sample.partition = 0;
  sample.seq = seq;
  sample.send_us = sent.wall;
  sample.ack_us = done.wall;
  sample.ack_error = error;
  out.samples.push_back(std::move(sample));
  if (error != 0) {
    ++status_.failures;
    status_.last_error = why;
    if (!status_.failing_since) status_.failing_since = sent;
    return;
  }
  const auto latency = done.mono - sent.mono;
  status_.last_latency_us = latency;
  status_.latency.add(latency);
  status_.failing_since.reset();
  if (status_.last_ok) {
    const auto interval = done.mono - status_.last_ok->mono;
    status_.longest_gap_us = std::max(status_.longest_gap_us, interval);
    if (interval > gap_threshold_us_) {
      ++status_.gaps;
      storage::Gap gap;
      gap.cluster = cluster_;
      gap.topic = stream_;
      gap.partition = 0;
      gap.kind = storage::GapKind::kAck;
      gap.start_us = status_.last_ok->wall;
      gap.end_us = done.wall;
      gap.duration_us = interval;
      gap.seq_before = last_ok_seq_;
      gap.seq_after = seq;
      out.gaps.push_back(gap);
    }
  }
  status_.last_ok = done;
  last_ok_seq_ = seq;
}

void publishOutput(storage::Store& store, const std::string& cluster, ControlOutput& out) {
  for (auto& s : out.samples) store.addSample(std::move(s));
  for (auto& g : out.gaps) {
    spdlog::info("cluster {}: {} answered again after {:.3f} s", cluster, g.topic,
                 static_cast<double>(g.duration_us) / 1e6);
    store.addGap(std::move(g));
  }
  for (auto& e : out.events) {
    spdlog::info("cluster {}: {} {}", cluster, e.kind, e.detail);
    store.addEvent(std::move(e));
  }
}

void recordOperation(OperationLedger& ledger, const std::string& cluster, const char* what,
                     common::Instant sent, common::Instant done, const std::string& problem,
                     ControlOutput& out) {
  const auto last_error = ledger.status().last_error;
  const bool was_failing = ledger.status().failing_since.has_value();
  ledger.record(sent, done, problem.empty() ? 0 : kControlNoAnswer, problem, out);
  if (!problem.empty() && (!was_failing || problem != last_error))
    spdlog::warn("cluster {}: {}: {}", cluster, what, problem);
}

void QuorumWatch::answered(common::WallMicros at, std::int32_t leader, std::int32_t epoch,
                           const std::string& answered_by, ControlOutput& out) {
  error_.clear();
  silent_ = false;
  const auto previous_watch = last_watch_us_;
  last_watch_us_ = at;
  if (leader_ && leader_->leader == leader && leader_->epoch == epoch) {
    leader_->last_us = at;
    leader_->answered_by = answered_by;
    return;
  }
  if (leader_ && epoch < leader_->epoch) return;  // a stale answer from a deposed leader
  if (leader_) {
    ++changes_;
    out.events.push_back(
        controlEvent(cluster_, at, "quorum_leader_elected", leader,
                     {{"leader", leader},
                      {"epoch", epoch},
                      {"previous_leader", leader_->leader},
                      {"previous_epoch", leader_->epoch},
                      {"previous_last_us", leader_->last_us},
                      {"leaderless_us", at - leader_->last_us},
                      {"elections", epoch - leader_->epoch},
                      {"watch_period_us", previous_watch ? at - *previous_watch : 0},
                      {"answered_by", answered_by}}));
  }
  leader_ = QuorumLeaderSeen{leader, epoch, at, at, answered_by};
}

void QuorumWatch::unanswered(common::WallMicros at, const std::string& error, ControlOutput& out) {
  error_ = error;
  last_watch_us_ = at;
  if (silent_ || !leader_) return;
  silent_ = true;
  out.events.push_back(controlEvent(cluster_, at, "quorum_unanswered", leader_->leader,
                                    {{"leader", leader_->leader},
                                     {"epoch", leader_->epoch},
                                     {"last_us", leader_->last_us},
                                     {"error", error}}));
}

ControlProbe::ControlProbe(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                           storage::Store& store, const common::Clock& clock)
    : cluster_(cluster),
      cluster_id_(cluster_id),
      store_(store),
      clock_(clock),
      ledger_(cluster_id, kControlStream, cluster.probe.control.interval_us,
              cluster.probe.control.gap_threshold_us),
      watch_(cluster_id),
      operations_(clock),
      watcher_(clock) {
  servers_ = kafka::bootstrapServers(cluster_.bootstrap, nullptr);
  describer_problem_ = kafka::quorumClientProblem(cluster_.client);
  if (describer_problem_.empty()) {
    kafka::QuorumClientOptions options;
    options.bootstrap = cluster_.bootstrap;
    options.properties = cluster_.client;
    options.client_id = "kfaild-" + cluster_.name + "-control";
    options.timeout_ms = voterTimeoutMs(cluster_.probe.control);
    describer_.emplace(std::move(options));
  }
}

ControlProbe::~ControlProbe() {
  stop();
}

Status ControlProbe::start() {
  kafka::ClientOptions options;
  options.bootstrap = cluster_.bootstrap;
  options.properties = cluster_.client;
  options.client_id = "kfaild-" + cluster_.name + "-control";
  // As the poller's client: a request to a broker whose packets vanish gives up within the
  // operation's timeout, and the next operation goes to another broker.
  const auto timeout_ms = std::to_string(cluster_.probe.control.timeout_us / 1000);
  auto client = kafka::createClient(RD_KAFKA_PRODUCER, options,
                                    {{"allow.auto.create.topics", "false"},
                                     {"socket.timeout.ms", timeout_ms},
                                     // librdkafka's 10 s would add up to that much of the
                                     // client's own waiting to the control plane's answer
                                     // after an outage, as for the probe's clients.
                                     {"reconnect.backoff.max.ms", "1000"}});
  if (!client) return client.error();
  client_ = std::move(*client);
  cancel_ = false;
  operations_.start("kfaild:control", [this] { operationLoop(); });
  if (describer_) {
    watcher_.start("kfaild:qwatch", [this] { watchLoop(); });
  } else {
    std::lock_guard lock(mutex_);
    ControlOutput ignored;
    watch_.unanswered(clock_.wallNow(), describer_problem_, ignored);
  }
  return okStatus();
}

void ControlProbe::requestStop() {
  cancel_ = true;
  operations_.requestStop();
  watcher_.requestStop();
}

void ControlProbe::stop() {
  requestStop();
  operations_.stop();
  watcher_.stop();
  client_.reset();
}

ControlStatus ControlProbe::status() const {
  std::lock_guard lock(mutex_);
  ControlStatus status;
  static_cast<OperationStatus&>(status) = ledger_.status();
  status.quorum = watch_.leader();
  status.quorum_error = watch_.error();
  status.leader_changes = watch_.changes();
  status.requests_via = requests_via_;
  return status;
}

void ControlProbe::steerAround(std::vector<std::int32_t> nodes) const {
  std::lock_guard lock(avoid_mutex_);
  avoid_ = std::move(nodes);
}

void ControlProbe::steer() {
  std::vector<std::int32_t> avoid;
  {
    std::lock_guard lock(avoid_mutex_);
    avoid = avoid_;
  }
  const auto avoided = [&avoid](std::int32_t id) {
    return std::find(avoid.begin(), avoid.end(), id) != avoid.end();
  };
  const auto before = rd_kafka_controllerid(client_.get(), 0);
  if (!avoided(before)) return;
  auto now = before;
  for (int i = 0; i < kSteerAttempts && avoided(now) && !operations_.stopRequested(); ++i) {
    now = kafka::refreshControllerId(client_.get(), kRefreshTimeoutMs);
  }
  if (now != before) {
    spdlog::info(
        "control probe {}: controller requests now go to broker {}, not {} (a drill's target)",
        cluster_.name, now, before);
  }
}

void ControlProbe::publish(ControlOutput& out) {
  publishOutput(store_, cluster_.name, out);
}

void ControlProbe::operationLoop() {
  const auto& c = cluster_.probe.control;
  const int timeout_ms = static_cast<int>(c.timeout_us / 1000);
  kafka::QueuePtr queue(rd_kafka_queue_new(client_.get()));
  bool failed = false;
  while (!operations_.stopRequested()) {
    steer();
    const auto sent = clock_.now();
    Status verdict = okStatus();
    // While its controller's broker refuses connections, a librdkafka admin request waiting for
    // it reconnects at once on every broker state change, past reconnect.backoff.ms: with the
    // whole cluster down that kept a core busy for as long as the outage lasted (librdkafka
    // 2.14.2). So after a failed check the next asks librdkafka only once a bootstrap server
    // accepts a TCP connection; until then the check fails at once, without a request, and the
    // control plane's recovery is seen within an interval, as a failed request's would be.
    bool asked = true;
    if (failed) {
      verdict = kafka::anyServerAccepts(servers_, timeout_ms, &cancel_);
      asked = static_cast<bool>(verdict);
    }
    if (asked) {
      requests_via_ = rd_kafka_controllerid(client_.get(), 0);
      verdict = kafka::sendControllerCheck(client_.get(), queue.get(), timeout_ms);
    }
    if (asked && verdict) {
      // Waits in slices so that stop() is served within 100 ms; librdkafka answers every admin
      // request by its timeout, the extra second is a bound should it not.
      kafka::EventPtr event;
      while (!event && !operations_.stopRequested() &&
             clock_.monoNow() - sent.mono < c.timeout_us + 1'000'000) {
        event.reset(rd_kafka_queue_poll(queue.get(), 100));
      }
      // librdkafka answers every admin request by its timeout; one it never answered is recorded
      // as failed, and the next goes on a new queue so that a late answer cannot be taken for its
      // own (the request keeps a reference to the old queue, which dies with it).
      verdict = event ? kafka::controllerCheckResult(event.get())
                      : Status(Error{std::make_error_code(std::errc::timed_out),
                                     "librdkafka gave no answer within the timeout and 1 s"});
      if (!event) queue.reset(rd_kafka_queue_new(client_.get()));
    }
    if (operations_.stopRequested()) break;
    const auto done = clock_.now();
    failed = !verdict;
    ControlOutput out;
    {
      std::lock_guard lock(mutex_);
      recordOperation(ledger_, cluster_.name, "control plane", sent, done,
                      verdict ? std::string() : verdict.error().message, out);
    }
    publish(out);
    if (!verdict && asked && !operations_.stopRequested()) {
      // The request may have gone nowhere: to the broker librdkafka's last metadata named as the
      // controller, now down (kafka::refreshControllerId). The next goes where a live broker says.
      const auto before = rd_kafka_controllerid(client_.get(), 0);
      const auto after =
          kafka::refreshControllerId(client_.get(), std::min(timeout_ms, kRefreshTimeoutMs));
      if (after != before) {
        spdlog::info("control probe {}: controller requests now go to broker {} (were to {})",
                     cluster_.name, after, before);
      }
    }
    const auto wait = c.interval_us - (clock_.monoNow() - sent.mono);
    if (wait > 0) operations_.sleepFor(std::chrono::microseconds(wait));
  }
}

void ControlProbe::watchLoop() {
  while (!watcher_.stopRequested()) {
    const auto started = clock_.monoNow();
    watchOnce();
    const auto wait = cluster_.probe.control.interval_us - (clock_.monoNow() - started);
    if (wait > 0) watcher_.sleepFor(std::chrono::microseconds(wait));
  }
}

void ControlProbe::watchOnce() {
  const int timeout_ms = voterTimeoutMs(cluster_.probe.control);
  std::optional<kafka::QuorumInfo> answer;
  std::string errors;
  const auto note = [&errors](const std::string& e) { errors += (errors.empty() ? "" : "; ") + e; };
  std::vector<std::int32_t> order;
  {
    std::lock_guard lock(mutex_);
    if (watch_.leader() && endpoints_.count(watch_.leader()->leader))
      order.push_back(watch_.leader()->leader);
  }
  for (const auto& [id, listeners] : endpoints_) {
    if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
  }
  for (const auto id : order) {
    if (cancel_) return;
    const auto& listeners = endpoints_.at(id);
    if (listeners.empty()) continue;
    auto quorum = describer_->describeAt(listeners.front().host, listeners.front().port, timeout_ms,
                                         &cancel_);
    if (quorum && quorum->leader_id >= 0) {
      answer = std::move(*quorum);
      break;
    }
    note("controller " + std::to_string(id) + ": " +
         (quorum ? std::string("no leader in its answer") : quorum.error().message));
  }
  // Before the voters' listeners are known (DescribeQuorum v0/v1, or the first watch), through the
  // bootstrap brokers, which forward to the active controller; and every 20th silent watch, in
  // case the voters moved (through the brokers a leaderless quorum costs up to a timeout per
  // broker, so not every time).
  if (!answer && (endpoints_.empty() || ++silent_watches_ % 20 == 0)) {
    auto quorum = describer_->describe(cancel_);
    if (quorum && quorum->leader_id >= 0) {
      answer = std::move(*quorum);
    } else {
      note(quorum ? std::string("no leader in the answer") : quorum.error().message);
    }
  }
  if (cancel_) return;
  const auto at = clock_.wallNow();
  ControlOutput out;
  {
    std::lock_guard lock(mutex_);
    if (answer) {
      silent_watches_ = 0;
      if (!answer->endpoints.empty()) endpoints_ = answer->endpoints;
      watch_.answered(at, answer->leader_id, answer->leader_epoch, answer->answered_by, out);
    } else {
      watch_.unanswered(at, errors.empty() ? "no voter answered" : errors, out);
    }
  }
  publish(out);
}

}  // namespace kfaild::probe
