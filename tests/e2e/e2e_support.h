#pragma once

// kfaild as a process on the lab, for the end-to-end tests: a configuration written for a fresh
// probe topic (optionally with the lab's nodes as the drill inventory), kfaild started as a
// child with its port read from its log, HTTP helpers, and a record of the figures a
// reliability test measured (docs/RELIABILITY.md is made from those records).

#include <sqlite3.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <tuple>

#include "server/kafka/admin.h"
#include "server/kafka/client.h"
#include "server/kafka/metadata.h"
#include "storage/sample_block.h"
#include "tests/api/http_client.h"
#include "tests/support/lab.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/reliability_record.h"
#include "tests/support/temp_dir.h"

namespace kfaild::e2e {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::Record;

inline constexpr const char* kToken = "e2e-api-token-0123456789abcdef";
inline constexpr std::int64_t kSessionTimeoutUs = 9'000'000;
inline constexpr std::int64_t kHeartbeatUs = 2'000'000;
// A graceful stop hands leadership over before the broker goes: a partition waits for the
// election, its client's discovery and the new ISR's catch-up, never for failure detection. So its
// stall stays below the shortest a kill's can be (the session timeout less one heartbeat, 7 s),
// however slow the machine. The test runs' labs measure 0.1-1.5 s on an idle machine; with two
// cores shared by six labs (load average 37) a CI run measured 4.7 s (a leader's partition:
// election 0.49 s, its client's discovery 1.6 s, the first ack 2.95 s after that).
inline constexpr std::int64_t kGracefulStallLimitUs = kSessionTimeoutUs - kHeartbeatUs;

inline std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::string tail(const std::string& text, std::size_t n = 6000) {
  return text.size() > n ? text.substr(text.size() - n) : text;
}

// How a test wants kfaild configured.
struct LabOptions {
  std::string web_dir;       // serve the dashboard from here
  bool inventory = true;     // the lab's nodes as the drill inventory (local injector)
  std::string node1_ssh;     // YAML flow mapping: broker 1 reached over ssh instead
  int shutdown_grace_s = 0;  // 0: kfaild's default
  bool single = false;  // also probe `<topic>-single`: RF 1 on broker 1 (the article's `single`)
  bool pair = false;    // also probe `<topic>-pair`: RF 2 on brokers 1 and 2, min.insync.replicas 2
  bool token_file = true;    // false: no http.token_file, kfaild makes <dir>/api-token itself
  std::string extra_yaml;    // more top-level keys for kfaild.yaml (e.g. notifications)
  std::string cluster_yaml;  // more keys of the cluster, each line indented by 4 (e.g. client)
  std::string probe_client;  // probe.client (librdkafka, wire); empty: kfaild's default
  std::string probe_yaml;    // more keys of the probe, each line indented by 6
  // The probe's interval. 100 ms, not kfaild's default of 20: a lab's four JVMs, probed by
  // kfaild (librdkafka client, three partitions), took 0.43 cores at 50 ms and 0.26 at 100 ms,
  // idle 0.07 (utime+stime over 15 s, 4 December), and three labs share two cores in the test
  // run. Checks in seconds (detection, fencing, recovery) hold at any of them; a test that
  // measures at the probe's own resolution asks for 20.
  int interval_ms = 100;
};

struct Lab {
  testing::TempDir dir;
  std::string topic = "e2e-api-" + std::to_string(std::random_device{}() % 1'000'000);
  std::string single = topic + "-single";
  std::string pair = topic + "-pair";
  std::string config = (dir / "kfaild.yaml").string();
  std::string token_file = (dir / "token").string();
  std::string db = (dir / "kfaild.db").string();

  explicit Lab(const std::string& web_dir = "", bool inventory = true)
      : Lab(options(web_dir, inventory)) {}

  static LabOptions options(const std::string& web_dir, bool inventory) {
    LabOptions o;
    o.web_dir = web_dir;
    o.inventory = inventory;
    return o;
  }

  explicit Lab(const LabOptions& options) {
    if (options.token_file) {
      std::ofstream(token_file) << kToken << "\n";
      std::filesystem::permissions(
          token_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    } else {
      token_file = (dir / "api-token").string();  // where kfaild will write the token it makes
    }
    const std::string lab = testing::labStateDir();
    std::ofstream c(config);
    c << "log_level: info\n"
      << "http: {port: 0" << (options.token_file ? ", token_file: " + token_file : std::string())
      << (options.web_dir.empty() ? "" : ", web_dir: " + options.web_dir) << "}\n"
      << "storage: {path: " << db << "}\n";
    if (options.shutdown_grace_s > 0) c << "shutdown_grace_s: " << options.shutdown_grace_s << "\n";
    c << options.extra_yaml;
    c << "clusters:\n"
      << "  - name: lab\n"
      << "    bootstrap: " << testing::labBootstrap() << "\n"
      << "    probe:\n"
      << (options.probe_client.empty() ? std::string()
                                       : "      client: " + options.probe_client + "\n")
      << options.probe_yaml << "      interval_ms: " << options.interval_ms << "\n"
      << "      topics:\n"
      << "        - name: " << topic << "\n"
      << "          create: {replica_assignment: \"1:2:3,2:3:1,3:1:2\", configs: "
         "{min.insync.replicas: \"2\"}}\n";
    if (options.single) {
      c << "        - name: " << single << "\n"
        << "          create: {replica_assignment: \"1\"}\n";
    }
    if (options.pair) {
      c << "        - name: " << pair << "\n"
        << "          create: {replica_assignment: \"1:2\", configs: {min.insync.replicas: "
           "\"2\"}}\n";
    }
    c << options.cluster_yaml;
    c << "    observe: {client_debug: \"metadata,topic\"}\n";
    if (!options.inventory) return;
    c << "    inventory:\n";
    for (int id : {1, 2, 3, 100}) {
      const auto node = lab + "/node" + std::to_string(id);
      c << "      - id: " << id << "\n" << (id == 100 ? "        role: controller\n" : "");
      if (id == 1 && !options.node1_ssh.empty()) {
        c << "        ssh: " << options.node1_ssh << "\n";
        continue;
      }
      c << "        local: {pid_file: " << node << "/kafka.pid, start_command: ["
        << KFAILD_SOURCE_DIR << "/lab/lab, start, \"" << id << "\"], log_dir: " << node
        << "/logs}\n";
    }
  }
};

// kfaild as a child process, with the port it listens on read from its log.
struct Kfaild {
  std::string log;
  testing::ChildProcess process;
  std::uint16_t port = 0;

  // `binary`: another kfaild than the build's (the Debian package's, unpacked).
  Kfaild(const Lab& lab, const std::string& name,
         const std::string& binary = testing::kfaildBinary())
      : log((lab.dir / (name + ".log")).string()), process({binary, "--config", lab.config}, log) {
    // Start-up may first recover a node an earlier kfaild left down: that can take a minute.
    const std::regex listening(R"(http: listening on http://127\.0\.0\.1:([0-9]+)/)");
    const auto deadline = std::chrono::steady_clock::now() + 300s;
    while (std::chrono::steady_clock::now() < deadline && process.running()) {
      std::smatch m;
      const auto text = readAll(log);
      if (std::regex_search(text, m, listening)) {
        port = static_cast<std::uint16_t>(std::stoi(m[1]));
        return;
      }
      std::this_thread::sleep_for(200ms);
    }
    INFO("kfaild log:\n" << tail(readAll(log)));
    FAIL("kfaild did not start listening");
  }

  json get(const std::string& target) {
    const auto reply = api::testing::httpGet(port, target);
    INFO(target << " -> " << reply.status << " " << reply.body.substr(0, 500));
    REQUIRE(reply.status == 200);
    return reply.json();
  }

  api::testing::HttpReply post(const std::string& target, const std::string& body) {
    api::testing::HttpConnection connection(port);
    return connection.request({"POST",
                               target,
                               body,
                               {{"Authorization", std::string("Bearer ") + kToken},
                                {"Content-Type", "application/json"}}});
  }

  // Probing steadily: every partition acked within the last half second and under 20 messages in
  // flight, six polls (1.5 s) in a row. A broker restarted by the previous test lags
  // for a while on a busy machine (2 cores, four JVMs), and kfaild's guard refuses a drill while
  // the probe is more than 2 s behind.
  void waitSteady(const std::string& topic) {
    const auto deadline = std::chrono::steady_clock::now() + 240s;
    int good = 0;
    while (std::chrono::steady_clock::now() < deadline && good < 6) {
      const auto cluster = get("/api/v1/clusters/lab");
      bool ok = cluster["probe"]["phase"] == "probing" && cluster["brokers"].size() == 3;
      int partitions = 0;
      for (const auto& t : cluster["topics"]) {
        if (t["name"] != topic) continue;
        for (const auto& p : t["partitions"]) {
          ++partitions;
          const auto& probe = p["probe"];
          ok = ok && p["isr"].size() == 3 && probe.is_object() &&
               probe["current_ack_gap_seconds"].is_number() &&
               probe["current_ack_gap_seconds"].get<double>() < 0.5 &&
               probe["in_flight"].get<int>() < 20;
        }
      }
      // Every client profile's probe too (probe.profiles): each reads the same partitions.
      for (const auto& profile : cluster["profiles"]) {
        ok = ok && profile["phase"] == "probing";
        for (const auto& p : profile["partitions"]) {
          const auto& probe = p["probe"];
          ok = ok && probe["current_ack_gap_seconds"].is_number() &&
               probe["current_ack_gap_seconds"].get<double>() < 0.5 &&
               probe["in_flight"].get<int>() < 20;
        }
      }
      good = ok && partitions == 3 ? good + 1 : 0;
      std::this_thread::sleep_for(250ms);
    }
    INFO("kfaild log:\n" << tail(readAll(log)));
    REQUIRE(good >= 6);
  }

  json waitForState(std::int64_t id, const std::function<bool(const std::string&)>& wanted,
                    std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    json drill;
    while (std::chrono::steady_clock::now() < deadline) {
      drill = get("/api/v1/drills/" + std::to_string(id));
      if (wanted(drill["state"].get<std::string>())) return drill;
      std::this_thread::sleep_for(250ms);
    }
    INFO("drill: " << drill.dump() << "\nkfaild log:\n" << tail(readAll(log)));
    FAIL("drill " << id << " never reached the wanted state");
    return drill;
  }
};

// Runs a shell command; its exit status (-1 when killed by a signal) and standard output.
inline std::pair<int, std::string> run(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Runs kfailctl and returns its exit status and standard output.
inline std::pair<int, std::string> kfailctl(const Kfaild& kfaild, const Lab& lab,
                                            const std::string& args) {
  return run(std::string(KFAILD_BINARY_DIR) + "/tools/kfailctl/kfailctl --url http://127.0.0.1:" +
             std::to_string(kfaild.port) + " --token-file " + lab.token_file + " " + args);
}

inline const json& partitionOf(const json& analysis, const std::string& topic, int partition) {
  for (const auto& p : analysis["partitions"]) {
    if (p["topic"] == topic && p["partition"] == partition) return p;
  }
  FAIL("partition " << partition << " missing from the analysis");
  static const json kNone;
  return kNone;
}

inline std::int64_t ackStall(const json& p) {
  const auto& stall = p["ack"]["stall"];
  return stall.is_object() ? stall["duration_us"].get<std::int64_t>() : 0;
}

// When a partition's ack stall ended (0: no stall). A kill stalls a partition with the node in its
// ISR until the controller fences it: the stall ends at or after the fence. Its duration may be a
// little shorter than the detection (fault to fence), as messages the node had replicated before
// it died are still acked after the fault and the stall starts at the last of them.
inline std::int64_t ackStallEnd(const json& p) {
  const auto& stall = p["ack"]["stall"];
  return stall.is_object() ? stall["end_us"].get<std::int64_t>() : 0;
}

// A drill request over the API; the drill's id once it is accepted (202). A refusal because the
// probe is behind (the guard that keeps a drill from measuring a backlog: on two shared cores a
// restarted kfaild or broker lags for a while) is retried for up to 60 s; any other is a failure.
inline std::int64_t startDrill(Kfaild& kfaild, const std::string& body) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  auto reply = kfaild.post("/api/v1/clusters/lab/drills", body);
  while (reply.status == 409 && reply.body.find("measure the backlog") != std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1s);
    reply = kfaild.post("/api/v1/clusters/lab/drills", body);
  }
  INFO(reply.status << " " << reply.body << "\nkfaild log:\n" << tail(readAll(kfaild.log)));
  REQUIRE(reply.status == 202);
  return reply.json()["id"].get<std::int64_t>();
}

inline bool finished(const std::string& state) {
  return state == "done" || state == "failed" || state == "aborted";
}

// A drill request a test expects refused (409) for another reason than the probe's: asked again,
// twice at most 3 s apart, while the refusal is the probe's (testing::refusedForProbe: a probe
// behind on a loaded machine; a CI run's SASL_SSL lab refused for "1.2 s behind" right after its
// steady wait, before the quorum guard that test is about could answer).
inline api::testing::HttpReply postRefused(Kfaild& kfaild, const std::string& body) {
  auto reply = kfaild.post("/api/v1/clusters/lab/drills", body);
  for (int again = 0;
       again < 2 && reply.status == 409 &&
       testing::refusedForProbe("refused: " + reply.json().value("reason", std::string()));
       ++again) {
    WARN("asked again: " << reply.json().value("reason", std::string()));
    std::this_thread::sleep_for(3s);
    reply = kfaild.post("/api/v1/clusters/lab/drills", body);
  }
  return reply;
}

// A drill over the API run to its end, whatever that end is. One kfaild refused after accepting
// it because its probe was not steady (testing::refusedForProbe: the node was not touched) is
// asked again, up to twice, once the probe is steady again. (A CI run's sshd test, started while
// five labs came up beside it, saw its preflight end for another reason than the unreachable node
// the test is about.)
inline json runDrillToEnd(Kfaild& kfaild, const std::string& body,
                          std::chrono::seconds limit = 600s) {
  auto id = startDrill(kfaild, body);
  auto drill = kfaild.waitForState(id, finished, limit);
  for (int again = 0; again < 2 && drill["state"] == "failed" &&
                      testing::refusedForProbe(drill["reason"].get<std::string>());
       ++again) {
    WARN("drill " << id << " asked again: " << drill["reason"].get<std::string>());
    std::this_thread::sleep_for(3s);
    id = startDrill(kfaild, body);
    drill = kfaild.waitForState(id, finished, limit);
  }
  return drill;
}

// A drill over the API run to its end (runDrillToEnd), which must be done with one run.
inline json runDrillToDone(Kfaild& kfaild, const std::string& body) {
  const auto drill = runDrillToEnd(kfaild, body);
  INFO("drill: " << drill.dump().substr(0, 12000) << "\nkfaild log:\n"
                 << tail(readAll(kfaild.log)));
  REQUIRE(drill["state"] == "done");
  REQUIRE(drill["runs"].size() == 1);
  return drill;
}

// The nodes `ids` of the lab the environment names in kfaild's inventory, as `lab status --json`
// gives them (a lab's own state dir, not the default lab's); ids of 100 and above are controllers.
inline void addLabInventory(const Lab& lab, std::initializer_list<int> ids) {
  std::ofstream c(lab.config, std::ios::app);
  c << "    inventory:\n";
  for (int id : ids) {
    const auto node = testing::labNode(id);
    REQUIRE(node);
    const auto dir = std::filesystem::path(node->pid_file).parent_path().string();
    c << "      - id: " << id << "\n"
      << (id >= 100 ? "        role: controller\n" : "")
      << "        local: {pid_file: " << node->pid_file << ", start_command: [" << KFAILD_SOURCE_DIR
      << "/lab/lab, start, \"" << id << "\"], log_dir: " << dir << "/logs}\n";
  }
}

// A topic deleted when the test ends, however it ends: a sole-replica topic (`single`) or one that
// losing broker 1 leaves below min.insync.replicas (`pair`), left behind, would make the guards
// refuse every later drill of broker 1 on the lab.
struct DeleteTopicAtEnd {
  std::string topic;
  ~DeleteTopicAtEnd() {
    kafka::ClientOptions options;
    options.bootstrap = testing::labBootstrap();
    options.client_id = "kfaild-e2e-cleanup";
    auto admin =
        kafka::createClient(RD_KAFKA_PRODUCER, options, {{"allow.auto.create.topics", "false"}});
    if (!admin) return;
    (void)kafka::deleteTopic(admin->get(), topic, 10'000);
  }
};

// Waits until every partition of every topic on the lab (internal ones too) has all its replicas
// in its ISR. A broker started again is registered and unfenced (`lab start --wait`) before it
// has caught up on every topic that earlier tests left; until it has, the guards rightly refuse
// a drill that would leave one of those partitions below min.insync.replicas.
inline void waitFullIsr(std::chrono::seconds limit = 120s) {
  kafka::ClientOptions options;
  options.bootstrap = testing::labBootstrap();
  options.client_id = "kfaild-e2e-isr";
  auto admin =
      kafka::createClient(RD_KAFKA_PRODUCER, options, {{"allow.auto.create.topics", "false"}});
  REQUIRE(admin);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string short_of;
  while (true) {
    short_of.clear();
    auto md = kafka::fetchAllMetadata(admin->get(), 5000);
    if (!md) {
      short_of = "metadata: " + md.error().describe();
    } else {
      for (const auto& t : md->topics) {
        for (const auto& p : t.partitions) {
          if (p.isr.size() < p.replicas.size())
            short_of = t.name + "-" + std::to_string(p.partition);
        }
      }
    }
    if (short_of.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(250ms);
  }
  INFO("a partition short of its full ISR: " << short_of);
  REQUIRE(short_of.empty());
}

// One value from the database file, read while kfaild runs or after it died.
inline std::string sqlValue(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* statement = nullptr;
  std::string value;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK &&
      sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

// The probe samples stored for one topic partition (partition < 0: every partition of every
// topic), decoded from their blocks, read while kfaild runs or after it died. Unordered.
inline std::vector<storage::BlockSample> storedSamples(const std::string& db_path,
                                                       const std::string& topic = "",
                                                       int partition = -1) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* statement = nullptr;
  const std::string sql =
      "SELECT b.first_send_us, b.data FROM probe_sample_blocks b JOIN probe_partitions p ON p.id = "
      "b.partition_id"
      " WHERE ?1 < 0 OR (p.topic = ?2 AND p.partition = ?1)";
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
  sqlite3_bind_int(statement, 1, partition);
  sqlite3_bind_text(statement, 2, topic.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<storage::BlockSample> samples;
  while (sqlite3_step(statement) == SQLITE_ROW) {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(statement, 1));
    const std::string_view bytes(data == nullptr ? "" : data,
                                 static_cast<std::size_t>(sqlite3_column_bytes(statement, 1)));
    const auto decoded =
        storage::decodeSampleBlock(bytes, sqlite3_column_int64(statement, 0), samples);
    CHECK(decoded.ok());
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return samples;
}

// Which lab nodes are alive now (`lab/lab status`).
inline std::map<int, bool> labAlive() {
  std::map<int, bool> alive;
  const auto text = testing::labOutput("status");
  const std::regex row(R"((^|\n)(1|2|3|100) +(broker|controller) +\S+ +\S+ +(yes|no))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator();
       ++it) {
    alive[std::stoi((*it)[2])] = (*it)[4] == "yes";
  }
  return alive;
}

// The token must never reach a log.
inline void checkTokenNotLogged(const Kfaild& kfaild) {
  CHECK(readAll(kfaild.log).find(kToken) == std::string::npos);
}

}  // namespace kfaild::e2e
