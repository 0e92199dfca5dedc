#include "server/kafka/metadata.h"

#include <algorithm>
#include <memory>

#include "server/kafka/errc.h"

namespace kfaild::kafka {
namespace {

struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* md) const { rd_kafka_metadata_destroy(md); }
};
struct TopicDeleter {
  void operator()(rd_kafka_topic_t* t) const { rd_kafka_topic_destroy(t); }
};

// Takes the broker list of one answer. An unchanged list keeps its earlier time: the broker
// events of a poll are dated by the first answer that showed the list they come from.
void fillBrokers(const rd_kafka_metadata_t& md, common::WallMicros at, ClusterSnapshot& snap) {
  std::vector<BrokerInfo> brokers;
  for (int i = 0; i < md.broker_cnt; ++i) {
    brokers.push_back({md.brokers[i].id, md.brokers[i].host, md.brokers[i].port});
  }
  std::sort(brokers.begin(), brokers.end(),
            [](const BrokerInfo& a, const BrokerInfo& b) { return a.id < b.id; });
  if (snap.brokers_at_us == 0 || brokers != snap.brokers) snap.brokers_at_us = at;
  snap.brokers = std::move(brokers);
  snap.answered_by = md.orig_broker_id;
}

Result<ClusterSnapshot> fetchTopics(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                    int timeout_ms, const common::Clock* clock) {
  ClusterSnapshot snap;
  auto request = [&](rd_kafka_topic_t* only)
      -> Result<std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter>> {
    const rd_kafka_metadata_t* md = nullptr;
    const auto err = rd_kafka_metadata(rk, 0, only, &md, timeout_ms);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return kafkaError(errc::metadata_failed, "metadata request", err);
    }
    return std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter>(md);
  };
  auto answeredAt = [clock] { return clock != nullptr ? clock->wallNow() : common::WallMicros{0}; };
  if (topics.empty()) {
    auto md = request(nullptr);
    if (!md) return md.error();
    fillBrokers(**md, answeredAt(), snap);
    return snap;
  }
  for (const auto& name : topics) {
    // A local handle only; see the header for why the request itself must not auto-create.
    std::unique_ptr<rd_kafka_topic_t, TopicDeleter> handle(
        rd_kafka_topic_new(rk, name.c_str(), nullptr));
    if (!handle) return kafkaError(errc::metadata_failed, "topic handle for " + name);
    auto md = request(handle.get());
    if (!md) return md.error();
    const auto at = answeredAt();
    fillBrokers(**md, at, snap);
    TopicInfo info;
    info.name = name;
    info.answered_at_us = at;
    for (int i = 0; i < (*md)->topic_cnt; ++i) {
      const auto& t = (*md)->topics[i];
      if (name != t.topic) continue;
      if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) info.error = rd_kafka_err2name(t.err);
      for (int p = 0; p < t.partition_cnt; ++p) {
        const auto& mp = t.partitions[p];
        PartitionInfo pi;
        pi.partition = mp.id;
        pi.leader = mp.leader;
        pi.replicas.assign(mp.replicas, mp.replicas + mp.replica_cnt);
        pi.isr.assign(mp.isrs, mp.isrs + mp.isr_cnt);
        if (mp.err != RD_KAFKA_RESP_ERR_NO_ERROR) pi.error = rd_kafka_err2name(mp.err);
        info.partitions.push_back(std::move(pi));
      }
    }
    std::sort(
        info.partitions.begin(), info.partitions.end(),
        [](const PartitionInfo& a, const PartitionInfo& b) { return a.partition < b.partition; });
    snap.topics.push_back(std::move(info));
  }
  return snap;
}

}  // namespace

Result<ClusterSnapshot> fetchMetadata(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                      int timeout_ms, const common::Clock& clock) {
  return fetchTopics(rk, topics, timeout_ms, &clock);
}

Result<ClusterSnapshot> fetchMetadata(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                      int timeout_ms) {
  return fetchTopics(rk, topics, timeout_ms, nullptr);
}

Result<ClusterSnapshot> fetchAllMetadata(rd_kafka_t* rk, int timeout_ms) {
  const rd_kafka_metadata_t* raw = nullptr;
  const auto err = rd_kafka_metadata(rk, 1, nullptr, &raw, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafkaError(errc::metadata_failed, "metadata request (all topics)", err);
  }
  std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter> md(raw);
  ClusterSnapshot snap;
  fillBrokers(*md, 0, snap);
  for (int i = 0; i < md->topic_cnt; ++i) {
    const auto& t = md->topics[i];
    TopicInfo info;
    info.name = t.topic;
    if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) info.error = rd_kafka_err2name(t.err);
    for (int p = 0; p < t.partition_cnt; ++p) {
      const auto& mp = t.partitions[p];
      PartitionInfo pi;
      pi.partition = mp.id;
      pi.leader = mp.leader;
      pi.replicas.assign(mp.replicas, mp.replicas + mp.replica_cnt);
      pi.isr.assign(mp.isrs, mp.isrs + mp.isr_cnt);
      if (mp.err != RD_KAFKA_RESP_ERR_NO_ERROR) pi.error = rd_kafka_err2name(mp.err);
      info.partitions.push_back(std::move(pi));
    }
    snap.topics.push_back(std::move(info));
  }
  return snap;
}

}  // namespace kfaild::kafka
