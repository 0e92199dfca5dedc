#include "server/probe/coordinator_probe.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/kafka/metadata.h"
#include "server/kafka/rdkafka_ptr.h"

namespace kfaild::probe {
namespace {

struct ErrorDeleter {
  void operator()(rd_kafka_error_t* e) const { rd_kafka_error_destroy(e); }
};
using ErrorPtr = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;

std::string describe(const rd_kafka_error_t* e) {
  return std::string(rd_kafka_error_name(e)) + ": " + rd_kafka_error_string(e);
}

// The verdict on an offset commit's result event: "" when the commit was written.
std::string commitProblem(rd_kafka_event_t* event) {
  if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::string(rd_kafka_err2name(rd_kafka_event_error(event))) + ": " +
           rd_kafka_event_error_string(event);
  }
  const auto* list = rd_kafka_event_topic_partition_list(event);
  if (list == nullptr) return "no partition in the answer";
  for (int i = 0; i < list->cnt; ++i) {
    if (list->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return std::string(rd_kafka_err2name(list->elems[i].err)) + ": " +
             rd_kafka_err2str(list->elems[i].err);
    }
  }
  return "";
}

kafka::LogSink quietLog() {
  return [](std::string_view client, int level, std::string_view fac, std::string_view msg) {
    if (level <= 3) {
      spdlog::debug("librdkafka {} {}: {}", client, fac, msg);
    } else {
      spdlog::trace("librdkafka {} {}: {}", client, fac, msg);
    }
  };
}

}  // namespace

void CoordinatorWatch::answered(common::WallMicros at, std::int32_t node, ControlOutput& out) {
  if (seen_ && seen_->node == node) {
    seen_->last_us = at;
    return;
  }
  if (seen_) {
    ++moves_;
    storage::Event e;
    e.cluster = cluster_;
    e.t_us = at;
    e.source = common::toString(common::EventSource::kCoordinator);
    e.kind = common::toString(common::EventKind::kCoordinatorMoved);
    e.broker = node;
    nlohmann::json detail = {{"type", type_},
                             {"key", key_},
                             {"from", seen_->node},
                             {"to", node},
                             {"previous_last_us", seen_->last_us},
                             {"moved_us", at - seen_->last_us}};
    if (!partition_.empty()) detail["partition"] = partition_;
    e.detail = common::jsonText(detail);
    out.events.push_back(std::move(e));
  }
  seen_ = CoordinatorSeen{node, partition_, at, at};
}

void CoordinatorWatch::setPartition(std::string partition) {
  partition_ = std::move(partition);
  if (seen_) seen_->partition = partition_;
}

CoordinatorProbe::CoordinatorProbe(const config::ClusterConfig& cluster,
                                   storage::ClusterId cluster_id, storage::Store& store,
                                   const common::Clock& clock)
    : cluster_(cluster),
      cluster_id_(cluster_id),
      store_(store),
      clock_(clock),
      topic_(cluster.probe.topics.empty() ? std::string() : cluster.probe.topics.front().name),
      commits_(cluster_id, kCommitStream, cluster.probe.coordinators.commit_interval_us,
               cluster.probe.coordinators.gap_threshold_us),
      transactions_(cluster_id, kTransactionStream, cluster.probe.coordinators.txn_interval_us,
                    cluster.probe.coordinators.txn_gap_threshold_us),
      group_watch_(cluster_id, "group", cluster.probe.coordinators.group),
      txn_watch_(cluster_id, "transaction", cluster.probe.coordinators.transactional_id),
      committer_loop_(clock),
      transaction_loop_(clock),
      watcher_(clock) {
  finder_problem_ = kafka::quorumClientProblem(cluster_.client);
  if (finder_problem_.empty()) {
    kafka::QuorumClientOptions options;
    options.bootstrap = cluster_.bootstrap;
    options.properties = cluster_.client;
    options.client_id = "kfaild-" + cluster_.name + "-coordinators";
    options.timeout_ms = 1000;
    finder_.emplace(std::move(options));
  } else {
    finder_problem_ = "the coordinators are not watched: " + finder_problem_;
  }
}

CoordinatorProbe::~CoordinatorProbe() {
  stop();
}

Status CoordinatorProbe::start() {
  const auto& c = cluster_.probe.coordinators;
  kafka::ClientOptions options;
  options.bootstrap = cluster_.bootstrap;
  options.properties = cluster_.client;
  options.client_id = "kfaild-" + cluster_.name + "-commits";
  // A coordinator that is down makes these clients log every reconnect attempt as an error; what
  // matters of it is in the streams (each failure's reason) and the watch's events.
  options.log = quietLog();
  // The commits are a consumer's (OffsetCommit of generation -1: a consumer that commits without
  // joining its group), so they find their coordinator as an application's consumer does: its
  // group handler marks a coordinator dead on a transport error or when librdkafka decommissions
  // the broker, and asks again. (The admin API's AlterConsumerGroupOffsets kept a decommissioned
  // broker as the coordinator, librdkafka#5511: commits never resumed after their coordinator's
  // broker was killed.) The consumer never joins, so it is destroyed without a consumer close,
  // and session.timeout.ms bounds how long its destruction waits for a coordinator.
  auto committer = kafka::createClient(
      RD_KAFKA_CONSUMER, options,
      {{"group.id", c.group},
       {"enable.auto.commit", "false"},
       {"enable.auto.offset.store", "false"},
       {"allow.auto.create.topics", "false"},
       {"session.timeout.ms", std::to_string(std::max<std::int64_t>(1000, c.timeout_us / 1000))},
       {"reconnect.backoff.max.ms", "1000"}});
  if (!committer) return committer.error();
  committer = kafka::Handle(committer->release(),
                            kafka::HandleDeleter{RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE});
  committer_ = std::move(*committer);
  if (c.transactions) {
    auto producer = makeTransactionalProducer();
    if (!producer) return producer.error();
    transactional_ = std::move(*producer);
  }
  cancel_ = false;
  committer_loop_.start("kfaild:commit", [this] { commitLoop(); });
  if (transactional_) transaction_loop_.start("kfaild:txn", [this] { transactionLoop(); });
  if (finder_) {
    watcher_.start("kfaild:coord", [this] { watchLoop(); });
  } else {
    std::lock_guard lock(mutex_);
    watch_error_ = finder_problem_;
  }
  return okStatus();
}

Result<kafka::Handle> CoordinatorProbe::makeTransactionalProducer() {
  const auto& c = cluster_.probe.coordinators;
  kafka::ClientOptions options;
  options.bootstrap = cluster_.bootstrap;
  options.properties = cluster_.client;
  options.client_id = "kfaild-" + cluster_.name + "-transactions";
  options.log = quietLog();
  return kafka::createClient(RD_KAFKA_PRODUCER, options,
                             {{"transactional.id", c.transactional_id},
                              {"acks", "all"},
                              {"enable.idempotence", "true"},
                              {"linger.ms", "0"},
                              {"allow.auto.create.topics", "false"},
                              {"reconnect.backoff.max.ms", "1000"},
                              {"transaction.timeout.ms", std::to_string(std::max<std::int64_t>(
                                                             60'000, 4 * c.timeout_us / 1000))}});
}

void CoordinatorProbe::requestStop() {
  cancel_ = true;
  committer_loop_.requestStop();
  transaction_loop_.requestStop();
  watcher_.requestStop();
}

void CoordinatorProbe::stop() {
  requestStop();
  committer_loop_.stop();
  transaction_loop_.stop();
  watcher_.stop();
  committer_.reset();
  transactional_.reset();
}

CoordinatorStatus CoordinatorProbe::status() const {
  const auto& c = cluster_.probe.coordinators;
  std::lock_guard lock(mutex_);
  CoordinatorStatus s;
  s.group = c.group;
  s.commits = commits_.status();
  s.group_coordinator = group_watch_.seen();
  if (c.transactions) {
    s.transactional_id = c.transactional_id;
    s.transactions = transactions_.status();
    s.transaction_coordinator = txn_watch_.seen();
  }
  s.watch_error = watch_error_;
  s.moves = group_watch_.moves() + txn_watch_.moves();
  return s;
}

void CoordinatorProbe::publish(ControlOutput& out) {
  publishOutput(store_, cluster_.name, out);
}

void CoordinatorProbe::commitLoop() {
  const auto& c = cluster_.probe.coordinators;
  kafka::QueuePtr queue(rd_kafka_queue_new(committer_.get()));
  std::int64_t offset = 0;
  while (!committer_loop_.stopRequested()) {
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), 0)->offset = ++offset;
    const auto sent = clock_.now();
    // The opaque tells this commit's result from a late one of a commit given up on.
    auto* tag = reinterpret_cast<void*>(static_cast<std::intptr_t>(offset));
    std::string problem;
    if (const auto err =
            rd_kafka_commit_queue(committer_.get(), list.get(), queue.get(), nullptr, tag);
        err) {
      problem = std::string(rd_kafka_err2name(err)) + ": " + rd_kafka_err2str(err);
    } else {
      kafka::EventPtr event;
      bool answered = false;
      while (!answered && !committer_loop_.stopRequested() &&
             clock_.monoNow() - sent.mono < c.timeout_us) {
        event.reset(rd_kafka_queue_poll(queue.get(), 100));
        answered = event && rd_kafka_event_type(event.get()) == RD_KAFKA_EVENT_OFFSET_COMMIT &&
                   rd_kafka_event_opaque(event.get()) == tag;
      }
      if (!committer_loop_.stopRequested()) {
        problem = answered ? commitProblem(event.get())
                           : "no answer within " + std::to_string(c.timeout_us / 1000) + " ms";
      }
    }
    if (committer_loop_.stopRequested()) break;
    const auto done = clock_.now();
    ControlOutput out;
    {
      std::lock_guard lock(mutex_);
      recordOperation(commits_, cluster_.name, "offset commit", sent, done, problem, out);
    }
    publish(out);
    const auto wait = c.commit_interval_us - (clock_.monoNow() - sent.mono);
    if (wait > 0) committer_loop_.sleepFor(std::chrono::microseconds(wait));
  }
}

void CoordinatorProbe::transactionLoop() {
  const auto& c = cluster_.probe.coordinators;
  const int timeout_ms = static_cast<int>(c.timeout_us / 1000);
  // librdkafka's transactional API is resumable: a commit or abort that timed out is still in
  // progress and must be called again (a begin meanwhile is refused as conflicting) until it
  // succeeds, asks for an abort, or fails fatally.
  enum class State { kInit, kIdle, kCommitting, kAborting };
  State state = State::kInit;
  std::int64_t seq = 0;
  const auto renew = [&] {
    if (auto fresh = makeTransactionalProducer(); fresh) transactional_ = std::move(*fresh);
    state = State::kInit;
  };
  while (!transaction_loop_.stopRequested()) {
    const auto sent = clock_.now();
    std::string problem;
    // One call's outcome: true when it succeeded; else the next state and the tick's problem.
    const auto settle = [&](ErrorPtr e, const char* what, State on_retry) {
      if (!e) return true;
      problem = std::string(what) + ": " + describe(e.get());
      if (rd_kafka_error_is_fatal(e.get())) {
        renew();
      } else if (rd_kafka_error_txn_requires_abort(e.get())) {
        state = State::kAborting;
      } else if (rd_kafka_error_is_retriable(e.get())) {
        state = on_retry;
      } else {
        state = on_retry == State::kCommitting ? State::kAborting : on_retry;
      }
      return false;
    };
    bool committed = false;
    if (state == State::kInit) {
      if (settle(ErrorPtr(rd_kafka_init_transactions(transactional_.get(), timeout_ms)),
                 "init transactions", State::kInit)) {
        state = State::kIdle;
      }
    }
    if (state == State::kAborting) {
      if (settle(ErrorPtr(rd_kafka_abort_transaction(transactional_.get(), timeout_ms)), "abort",
                 State::kAborting)) {
        state = State::kIdle;
      }
    }
    if (state == State::kIdle && problem.empty()) {
      if (settle(ErrorPtr(rd_kafka_begin_transaction(transactional_.get())), "begin",
                 State::kIdle)) {
        const auto value = "kfaild-txn-" + std::to_string(++seq);
        const auto err = rd_kafka_producev(
            transactional_.get(), RD_KAFKA_V_TOPIC(topic_.c_str()), RD_KAFKA_V_PARTITION(0),
            RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err) {
          problem = std::string("produce: ") + rd_kafka_err2name(err);
          state = State::kAborting;
        } else {
          state = State::kCommitting;
        }
      }
    }
    if (state == State::kCommitting && problem.empty()) {
      committed = settle(ErrorPtr(rd_kafka_commit_transaction(transactional_.get(), timeout_ms)),
                         "commit", State::kCommitting);
      if (committed) state = State::kIdle;
    }
    if (!committed && problem.empty()) problem = "no transaction committed";
    rd_kafka_poll(transactional_.get(), 0);
    const auto done = clock_.now();
    ControlOutput out;
    {
      std::lock_guard lock(mutex_);
      recordOperation(transactions_, cluster_.name, "transaction", sent, done,
                      committed ? std::string() : problem, out);
    }
    publish(out);
    const auto wait = c.txn_interval_us - (clock_.monoNow() - sent.mono);
    if (wait > 0) transaction_loop_.sleepFor(std::chrono::microseconds(wait));
  }
}

void CoordinatorProbe::watchLoop() {
  const auto& c = cluster_.probe.coordinators;
  while (!watcher_.stopRequested()) {
    const auto started = clock_.monoNow();
    learnPartitions();
    ControlOutput out;
    std::string errors;
    auto group = finder_->findCoordinator(kafka::CoordinatorType::kGroup, c.group, &cancel_);
    const auto group_at = clock_.wallNow();
    std::optional<Result<kafka::Coordinator>> txn;
    common::WallMicros txn_at = 0;
    if (c.transactions) {
      txn = finder_->findCoordinator(kafka::CoordinatorType::kTransaction, c.transactional_id,
                                     &cancel_);
      txn_at = clock_.wallNow();
    }
    if (cancel_) return;
    {
      std::lock_guard lock(mutex_);
      if (group) {
        group_watch_.answered(group_at, group->node, out);
      } else {
        errors = "group " + c.group + ": " + group.error().message;
      }
      if (txn) {
        if (*txn) {
          txn_watch_.answered(txn_at, (*txn)->node, out);
        } else {
          errors += (errors.empty() ? "" : "; ") +
                    ("transactional id " + c.transactional_id + ": " + txn->error().message);
        }
      }
      watch_error_ = errors;
    }
    publish(out);
    const auto wait = c.watch_interval_us - (clock_.monoNow() - started);
    if (wait > 0) watcher_.sleepFor(std::chrono::microseconds(wait));
  }
}

void CoordinatorProbe::learnPartitions() {
  const auto& c = cluster_.probe.coordinators;
  {
    std::lock_guard lock(mutex_);
    if (group_watch_.partitionKnown() && (!c.transactions || txn_watch_.partitionKnown())) return;
  }
  std::vector<std::string> topics{kafka::coordinatorTopic(kafka::CoordinatorType::kGroup)};
  if (c.transactions)
    topics.emplace_back(kafka::coordinatorTopic(kafka::CoordinatorType::kTransaction));
  // Bounded: the watch's own interval is the budget; a failure is tried again next time.
  auto metadata = kafka::fetchMetadata(committer_.get(), topics, 1000);
  if (!metadata) return;
  std::lock_guard lock(mutex_);
  for (const auto& t : metadata->topics) {
    const auto count = static_cast<std::int32_t>(t.partitions.size());
    if (count == 0) continue;
    if (t.name == topics.front()) {
      group_watch_.setPartition(t.name + "-" +
                                std::to_string(kafka::coordinatorPartition(c.group, count)));
    } else if (c.transactions) {
      txn_watch_.setPartition(
          t.name + "-" + std::to_string(kafka::coordinatorPartition(c.transactional_id, count)));
    }
  }
}

}  // namespace kfaild::probe
