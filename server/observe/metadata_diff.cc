#include "server/observe/metadata_diff.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "server/common/json_text.h"

namespace kfaild::observe {
using common::EventKind;

namespace {

storage::Event makeEvent(storage::ClusterId cluster, common::WallMicros at, EventKind kind,
                         const nlohmann::json& detail) {
  storage::Event e;
  e.cluster = cluster;
  e.t_us = at;
  e.source = toString(common::EventSource::kMetadata);
  e.kind = toString(kind);
  e.detail = common::jsonText(detail);
  return e;
}

std::vector<std::int32_t> minus(const std::vector<std::int32_t>& a,
                                const std::vector<std::int32_t>& b) {
  std::vector<std::int32_t> out;
  for (auto x : a) {
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<storage::Event> diffSnapshots(const kafka::ClusterSnapshot& before,
                                          const kafka::ClusterSnapshot& after,
                                          storage::ClusterId cluster) {
  std::vector<storage::Event> events;
  const auto brokers_at = after.brokers_at_us;
  std::set<std::int32_t> old_ids, new_ids;
  for (const auto& b : before.brokers) old_ids.insert(b.id);
  for (const auto& b : after.brokers) new_ids.insert(b.id);
  for (auto id : old_ids) {
    if (!new_ids.count(id)) {
      auto e = makeEvent(cluster, brokers_at, EventKind::kBrokerGone,
                         {{"brokers", after.brokers.size()}});
      e.broker = id;
      events.push_back(std::move(e));
    }
  }
  for (auto id : new_ids) {
    if (!old_ids.count(id)) {
      auto e = makeEvent(cluster, brokers_at, EventKind::kBrokerBack,
                         {{"brokers", after.brokers.size()}});
      e.broker = id;
      events.push_back(std::move(e));
    }
  }

  for (const auto& topic : after.topics) {
    const auto* old_topic = before.topic(topic.name);
    if (old_topic == nullptr) continue;
    const auto at = topic.answered_at_us;
    // The previous answer, which did not show the change yet: the change happened between the two
    // (the analysis takes that span as the event's resolution). 0: not stamped.
    const auto since = old_topic->answered_at_us;
    for (const auto& p : topic.partitions) {
      auto old_p =
          std::find_if(old_topic->partitions.begin(), old_topic->partitions.end(),
                       [&](const kafka::PartitionInfo& o) { return o.partition == p.partition; });
      if (old_p == old_topic->partitions.end()) continue;
      auto scoped = [&](storage::Event e) {
        e.topic = topic.name;
        e.partition = p.partition;
        return e;
      };
      if (old_p->leader != p.leader) {
        auto e = scoped(makeEvent(
            cluster, at, EventKind::kLeaderChange,
            {{"from", old_p->leader}, {"to", p.leader}, {"isr", p.isr}, {"since_us", since}}));
        e.broker = p.leader;
        events.push_back(std::move(e));
      }
      const auto removed = minus(old_p->isr, p.isr);
      const auto added = minus(p.isr, old_p->isr);
      if (!removed.empty()) {
        auto e = scoped(makeEvent(cluster, at, EventKind::kIsrShrink,
                                  {{"removed", removed}, {"isr", p.isr}, {"since_us", since}}));
        if (removed.size() == 1) e.broker = removed.front();
        events.push_back(std::move(e));
      }
      if (!added.empty()) {
        auto e = scoped(makeEvent(cluster, at, EventKind::kIsrExpand,
                                  {{"added", added}, {"isr", p.isr}, {"since_us", since}}));
        if (added.size() == 1) e.broker = added.front();
        events.push_back(std::move(e));
      }
      if (old_p->replicas != p.replicas) {
        events.push_back(scoped(makeEvent(cluster, at, EventKind::kReplicasChange,
                                          {{"from", old_p->replicas}, {"to", p.replicas}})));
      }
    }
  }
  return events;
}

std::optional<storage::Event> diffQuorum(const kafka::QuorumInfo& before,
                                         const kafka::QuorumInfo& after, storage::ClusterId cluster,
                                         common::WallMicros at) {
  if (before.leader_id == after.leader_id && before.leader_epoch == after.leader_epoch) {
    return std::nullopt;
  }
  auto e = makeEvent(
      cluster, at, EventKind::kControllerChange,
      {{"from", before.leader_id}, {"to", after.leader_id}, {"epoch", after.leader_epoch}});
  if (after.leader_id >= 0) e.broker = after.leader_id;
  return e;
}

}  // namespace kfaild::observe
