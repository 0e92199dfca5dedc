#include "server/drill/analysis_inputs.h"

#include <algorithm>

#include "server/drill/errc.h"

namespace kfaild::drill {
namespace {

Error loadError(std::string what, const Error& cause) {
  return Error{cause.code,
               "reading the analysis window: " + std::move(what) + ": " + cause.describe()};
}

// Samples of one partition, page by page on (send_us, seq): the store returns them in that
// order, and each page starts at the send time where the last one ended.
Status loadSamples(const storage::Store& store, const AnalysisWindow& window,
                   const std::string& topic, std::int32_t partition, std::size_t page,
                   std::vector<storage::ProbeSample>& into) {
  storage::SampleQuery q;
  q.cluster = window.cluster;
  q.topic = topic;
  q.partition = partition;
  q.range = window.samples;
  q.limit = page;
  std::optional<std::pair<std::int64_t, std::int64_t>> last;  // send_us, seq
  for (;;) {
    auto rows = store.samples(q);
    if (!rows) {
      return loadError("samples of " + topic + "-" + std::to_string(partition), rows.error());
    }
    bool moved = false;
    for (auto& s : *rows) {
      if (last && std::pair(s.send_us, s.seq) <= *last) continue;  // the page's overlap
      last = std::pair(s.send_us, s.seq);
      into.push_back(std::move(s));
      moved = true;
    }
    if (rows->size() < page) return okStatus();
    if (!moved) {
      return Error{make_error_code(errc::analysis_window),
                   "more than " + std::to_string(page) + " samples of " + topic + "-" +
                       std::to_string(partition) + " sent at one time (" +
                       std::to_string(last->first) + " µs): the window cannot be read whole"};
    }
    q.range.from_us = last->first;
  }
}

}  // namespace

Result<StoredInputs> loadAnalysisInputs(const storage::Store& store, const AnalysisWindow& window,
                                        PageSizes pages) {
  StoredInputs out;
  const std::size_t sample_page = std::max<std::size_t>(pages.samples, 1);
  for (const auto& [topic, partition] : window.partitions) {
    auto loaded = loadSamples(store, window, topic, partition, sample_page, out.samples);
    if (!loaded) return loaded.error();
  }
  storage::EventQuery eq;
  eq.cluster = window.cluster;
  eq.range = window.events;
  eq.limit = std::max<std::size_t>(pages.events, 1);
  for (;;) {
    auto rows = store.events(eq);
    if (!rows) return loadError("events", rows.error());
    const bool full = rows->size() >= eq.limit;
    if (!rows->empty()) {
      eq.range.from_us = rows->back().t_us;
      eq.after_id = rows->back().id;
    }
    out.events.insert(out.events.end(), std::make_move_iterator(rows->begin()),
                      std::make_move_iterator(rows->end()));
    if (!full) return out;
  }
}

}  // namespace kfaild::drill
