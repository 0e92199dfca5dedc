#include "server/config/config.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace config_test {

using namespace kfaild::config;

namespace {

const char* kArticle = R"(
log_level: info
storage:
  path: /tmp/k.db
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    client:
      security.protocol: plaintext
    probe:
      interval_ms: 20
      topics:
        - name: orders
          create:
            replica_assignment: "1:2:3,2:3:1,3:1:2"
            configs: {min.insync.replicas: "2"}
        - existing
)";

std::string errorOf(const std::string& yaml) {
  try {
    parseConfig(yaml, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the article's probe configuration parses with its defaults", "[unit][config]") {
  const auto c = parseConfig(kArticle);
  REQUIRE(c.clusters.size() == 1);
  const auto& cl = c.clusters[0];
  CHECK(cl.name == "lab");
  CHECK(cl.client.at("security.protocol") == "plaintext");
  CHECK(cl.probe.interval_us == 20'000);
  CHECK(cl.probe.gap_threshold_us == 100'000);  // 5 × interval
  REQUIRE(cl.probe.topics.size() == 2);
  const auto& orders = cl.probe.topics[0];
  REQUIRE(orders.create);
  CHECK(orders.create->partitions == 3);
  CHECK(orders.create->replication_factor == 3);
  CHECK(orders.create->replica_assignment[1] == std::vector<std::int32_t>{2, 3, 1});
  CHECK(orders.create->configs.at("min.insync.replicas") == "2");
  CHECK_FALSE(cl.probe.topics[1].create);
  CHECK(cl.observe.metadata_interval_us == 100'000);
  CHECK(cl.probe.sender_priority == kfaild::common::ThreadPriority::kRealtime);
}

TEST_CASE("observers run no faster than the probe unless their own interval is set",
          "[unit][config]") {
  const std::string base = kArticle;
  const auto with = [&](const std::string& probe_keys) {
    auto s = base;
    s.replace(s.find("interval_ms: 20"), 15, probe_keys);
    return parseConfig(s).clusters.at(0);
  };
  // What each observer runs at, in µs: metadata, control (and its gap threshold), commits (and
  // theirs), the FindCoordinator watch, transactions.
  const auto checkObservers = [](const ClusterConfig& c, std::int64_t metadata,
                                 std::int64_t control, std::int64_t control_gap,
                                 std::int64_t commit, std::int64_t commit_gap, std::int64_t watch,
                                 std::int64_t txn) {
    CHECK(c.observe.metadata_interval_us == metadata);
    CHECK(c.probe.control.interval_us == control);
    CHECK(c.probe.control.gap_threshold_us == control_gap);
    CHECK(c.probe.coordinators.commit_interval_us == commit);
    CHECK(c.probe.coordinators.gap_threshold_us == commit_gap);
    CHECK(c.probe.coordinators.watch_interval_us == watch);
    CHECK(c.probe.coordinators.txn_interval_us == txn);
  };
  // At 20 ms the defaults stand: metadata and commits every 100 ms, control and watch every 500 ms.
  checkObservers(with("interval_ms: 20"), 100'000, 500'000, 1'500'000, 100'000, 1'000'000, 500'000,
                 1'000'000);
  // Once a minute: every observer once a minute, its gap threshold from that.
  checkObservers(with("interval_ms: 60000"), 60'000'000, 60'000'000, 180'000'000, 60'000'000,
                 600'000'000, 60'000'000, 60'000'000);
  // Between the defaults: only those shorter than the probe's interval follow it.
  const auto mid = with("interval_ms: 250");
  CHECK(mid.observe.metadata_interval_us == 250'000);
  CHECK(mid.probe.control.interval_us == 500'000);
  CHECK(mid.probe.coordinators.commit_interval_us == 250'000);
  // An interval the file sets wins, with a slow probe too.
  auto explicit_yaml = base;
  explicit_yaml.replace(explicit_yaml.find("interval_ms: 20"), 15,
                        "interval_ms: 60000\n      control: {interval_ms: 500}\n"
                        "      coordinators: {commit_interval_ms: 100, watch_interval_ms: 1000}");
  explicit_yaml.replace(explicit_yaml.find("    probe:\n"), 11,
                        "    observe:\n      metadata_interval_ms: 200\n    probe:\n");
  const auto set = parseConfig(explicit_yaml).clusters.at(0);
  CHECK(set.observe.metadata_interval_us == 200'000);
  CHECK(set.probe.control.interval_us == 500'000);
  CHECK(set.probe.control.gap_threshold_us == 1'500'000);
  CHECK(set.probe.coordinators.commit_interval_us == 100'000);
  CHECK(set.probe.coordinators.watch_interval_us == 1'000'000);
  CHECK_FALSE(with("interval_ms: 60000\n      control: off").probe.control.enabled);
}

TEST_CASE("the probe sender's priority is realtime, high or normal", "[unit][config]") {
  const std::string base = kArticle;
  const auto with = [&](const std::string& value) {
    auto s = base;
    s.replace(s.find("interval_ms: 20"), 15, "interval_ms: 20\n      sender_priority: " + value);
    return s;
  };
  CHECK(parseConfig(with("high")).clusters[0].probe.sender_priority ==
        kfaild::common::ThreadPriority::kHigh);
  CHECK(parseConfig(with("normal")).clusters[0].probe.sender_priority ==
        kfaild::common::ThreadPriority::kNormal);
  CHECK(parseConfig(with("realtime")).clusters[0].probe.sender_priority ==
        kfaild::common::ThreadPriority::kRealtime);
  CHECK_THAT(
      errorOf(with("fifo")),
      Catch::Contains(
          "clusters[0].probe.sender_priority: must be `realtime`, `high` or `normal`, got 'fifo'"));
}

TEST_CASE(
    "a stuck consumer is restarted after 5 s, or half the loss timeout, and never at or "
    "after the loss timeout",
    "[unit][config]") {
  const std::string base = kArticle;
  const auto with = [&](const std::string& keys) {
    auto s = base;
    s.replace(s.find("interval_ms: 20"), 15, "interval_ms: 20\n      " + keys);
    return s;
  };
  CHECK(parseConfig(base).clusters[0].probe.consumer_restart_us == 5'000'000);
  CHECK(parseConfig(with("loss_timeout_ms: 6000")).clusters[0].probe.consumer_restart_us ==
        3'000'000);
  CHECK(parseConfig(with("consumer_restart_ms: 3000")).clusters[0].probe.consumer_restart_us ==
        3'000'000);
  CHECK_THAT(errorOf(with("loss_timeout_ms: 8000\n      consumer_restart_ms: 8000")),
             Catch::Contains(
                 "clusters[0].probe.consumer_restart_ms: must be below loss_timeout_ms (8000)"));
  CHECK_THAT(errorOf(with("consumer_restart_ms: 10")),
             Catch::Contains("clusters[0].probe.consumer_restart_ms"));
}

TEST_CASE(
    "the probe's client is librdkafka unless set to wire, which takes what kfaild's own protocol "
    "client speaks and refuses the rest naming the client key",
    "[unit][config]") {
  const std::string base = kArticle;
  const auto with = [&](const std::string& value, const std::string& protocol = "") {
    auto s = base;
    s.replace(s.find("interval_ms: 20"), 15, "interval_ms: 20\n      client: " + value);
    if (!protocol.empty())
      s.replace(s.find("security.protocol: plaintext"), 28, "security.protocol: " + protocol);
    return s;
  };
  CHECK(parseConfig(base).clusters[0].probe.client == kfaild::config::ProbeClient::kLibrdkafka);
  CHECK(parseConfig(with("wire")).clusters[0].probe.client == kfaild::config::ProbeClient::kWire);
  CHECK(parseConfig(with("librdkafka")).clusters[0].probe.client ==
        kfaild::config::ProbeClient::kLibrdkafka);
  CHECK_THAT(errorOf(with("franz")),
             Catch::Contains(
                 "clusters[0].probe.client: must be `librdkafka`, `wire` or `java`, got 'franz'"));
  const auto sasl = [](const std::string& mechanism) {
    return "SASL_SSL\n      sasl.mechanism: " + mechanism +
           "\n      sasl.username: kfaild\n      sasl.password: secret";
  };
  CHECK(parseConfig(with("wire", sasl("SCRAM-SHA-512"))).clusters[0].probe.client ==
        kfaild::config::ProbeClient::kWire);
  CHECK(parseConfig(with("wire", "SSL\n      ssl.ca.location: /etc/ca.pem"))
            .clusters[0]
            .probe.client == kfaild::config::ProbeClient::kWire);
  for (const auto* mechanism : {"GSSAPI", "OAUTHBEARER"}) {
    INFO(mechanism);
    const auto error = errorOf(with("wire", sasl(mechanism)));
    CHECK_THAT(error,
               Catch::Contains("clusters[0].client.sasl.mechanism: with probe.client wire: " +
                               std::string(mechanism) + " is not supported"));
    CHECK_THAT(error, !Catch::Contains("secret"));
    CHECK(parseConfig(with("librdkafka", sasl(mechanism))).clusters[0].probe.client ==
          kfaild::config::ProbeClient::kLibrdkafka);
  }
  CHECK_THAT(
      errorOf(with("wire", "SASL_SSL")),
      Catch::Contains("clusters[0].client.sasl.mechanism: with probe.client wire: required"));
  const auto java =
      parseConfig(with("java\n      java: {runtime: /opt/jdk/bin/java, jar: /opt/p.jar, settings: "
                       "{linger.ms: '0'}}"));
  CHECK(java.clusters[0].probe.client == kfaild::config::ProbeClient::kJava);
  CHECK(java.clusters[0].probe.java.runtime == "/opt/jdk/bin/java");
  CHECK(java.clusters[0].probe.java.jar == "/opt/p.jar");
  CHECK(java.clusters[0].probe.java.settings.at("linger.ms") == "0");
  CHECK_THAT(errorOf(with("java\n      java: {jvm: x}")),
             Catch::Contains("clusters[0].probe.java"));
  CHECK(parseConfig(with("wire", "PLAINTEXT")).clusters[0].probe.client ==
        kfaild::config::ProbeClient::kWire);
}

TEST_CASE("client profiles: the first is the primary, names unique, settings per client",
          "[unit][config]") {
  const std::string base = kArticle;
  const auto with = [&](const std::string& profiles) {
    auto s = base;
    s.replace(s.find("interval_ms: 20"), 15, "interval_ms: 20\n      profiles:\n" + profiles);
    return s;
  };
  // Without the key: one profile, named after the client.
  const auto plain = parseConfig(base).clusters[0].probe.profiles;
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].name == "librdkafka");
  CHECK(plain[0].client == kfaild::config::ProbeClient::kLibrdkafka);
  CHECK(plain[0].settings.empty());

  const auto two = parseConfig(with("        - name: librdkafka\n"
                                    "        - name: app-defaults\n"
                                    "          client: librdkafka\n"
                                    "          settings: {reconnect.backoff.max.ms: \"10000\"}\n"))
                       .clusters[0]
                       .probe;
  REQUIRE(two.profiles.size() == 2);
  CHECK(two.client == kfaild::config::ProbeClient::kLibrdkafka);
  CHECK(two.profiles[1].name == "app-defaults");
  CHECK(two.profiles[1].settings.at("reconnect.backoff.max.ms") == "10000");
  // The primary's client is the probe's.
  CHECK(parseConfig(with("        - {name: own, client: wire}\n        - name: rd\n"))
            .clusters[0]
            .probe.client == kfaild::config::ProbeClient::kWire);

  CHECK_THAT(errorOf(with("        - name: a\n        - name: a\n")),
             Catch::Contains("clusters[0].probe.profiles[1].name: profile 'a' is named twice"));
  CHECK_THAT(errorOf(with("        - {name: a, client: franz}\n")),
             Catch::Contains("clusters[0].probe.profiles[0].client: must be"));
  CHECK_THAT(errorOf(with("        - name: Java!\n")),
             Catch::Contains("clusters[0].probe.profiles[0].name: must be 1-32 characters"));
  CHECK_THAT(errorOf(with("        - {name: a, settings: {acks: \"1\"}}\n")),
             Catch::Contains("clusters[0].probe.profiles[0].settings.acks: set by kfaild"));
  CHECK_THAT(errorOf(with("        - {name: a, client: wire, settings: {linger.ms: \"5\"}}\n")),
             Catch::Contains("clusters[0].probe.profiles[0].settings.linger.ms: the wire client "
                             "takes no settings"));
  CHECK_THAT(errorOf(with("        - {name: a, colour: red}\n")),
             Catch::Contains("clusters[0].probe.profiles[0]"));
  auto empty = base;
  empty.replace(empty.find("interval_ms: 20"), 15, "interval_ms: 20\n      profiles: []");
  CHECK_THAT(errorOf(empty),
             Catch::Contains("clusters[0].probe.profiles: must be a non-empty list"));
}

TEST_CASE("a configuration mistake names its key", "[unit][config][reliability]") {
  std::string base = kArticle;
  auto replace = [&](const std::string& from, const std::string& to) {
    auto s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK_THAT(errorOf(replace("interval_ms: 20", "interval_ms: 0")),
             Catch::Contains("clusters[0].probe.interval_ms: must be between 1 and 60000, got 0"));
  CHECK_THAT(errorOf(replace("interval_ms: 20", "intervall_ms: 20")),
             Catch::Contains("clusters[0].probe.intervall_ms: unknown key"));
  CHECK_THAT(errorOf(replace("1:2:3,2:3:1,3:1:2", "1:2:3,2:x:1")),
             Catch::Contains("clusters[0].probe.topics[0].create.replica_assignment"));
  CHECK_THAT(errorOf(replace("1:2:3,2:3:1,3:1:2", "1:2:3,2:3")),
             Catch::Contains("same number of replicas"));
  CHECK_THAT(errorOf(replace("security.protocol: plaintext", "acks: \"1\"")),
             Catch::Contains("clusters[0].client.acks"));
  CHECK_THAT(errorOf(replace("name: lab", "name: Lab!")), Catch::Contains("clusters[0].name"));
  CHECK_THAT(errorOf(replace("- existing", "- bad topic")),
             Catch::Contains("clusters[0].probe.topics[1].name"));
  CHECK_THAT(errorOf("clusters: [\n"), Catch::Contains("test.yaml: not valid YAML"));
  CHECK_THAT(errorOf("log_level: info\n"), Catch::Contains("clusters: required"));
  CHECK_THAT(errorOf(replace("interval_ms: 20", "interval_ms: 20\n      interval_ms: 50")),
             Catch::Contains("clusters[0].probe.interval_ms: given twice"));
}

TEST_CASE("the drill inventory names how each node is reached, and only one way",
          "[unit][config]") {
  const std::string base = std::string(kArticle) + R"(
    inventory:
      - id: 1
        docker: {container: kbf-k1-1}
      - id: 2
        ssh: {host: k2.example, user: kafka, pid_command: "cat /run/kafka.pid", start_command: "systemctl start kafka"}
      - id: 100
        role: controller
        local: {pid_file: /tmp/c.pid, start_command: [/bin/true]}
)";
  const auto c = parseConfig(base);
  const auto& inv = c.clusters[0].inventory;
  REQUIRE(inv.size() == 3);
  CHECK(inv[0].docker->container == "kbf-k1-1");
  CHECK(inv[0].docker->endpoint == "unix:///var/run/docker.sock");
  CHECK(inv[1].ssh->port == 22);
  CHECK(inv[2].role == kfaild::common::NodeRole::kController);
  CHECK(inv[2].local->start_command == std::vector<std::string>{"/bin/true"});

  auto replace = [&](const std::string& from, const std::string& to) {
    auto s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK_THAT(errorOf(replace("container: kbf-k1-1", "container: \"k1; rm -rf /\"")),
             Catch::Contains("clusters[0].inventory[0].docker.container"));
  CHECK_THAT(errorOf(replace("host: k2.example", "host: \"k2$(reboot)\"")),
             Catch::Contains("clusters[0].inventory[1].ssh.host"));
  CHECK_THAT(
      errorOf(replace("docker: {container: kbf-k1-1}",
                      "docker: {container: a}\n        local: {pid_file: x, start_command: [y]}")),
      Catch::Contains("clusters[0].inventory[0]: needs exactly one of docker, ssh, local"));
  CHECK_THAT(errorOf(replace("id: 2", "id: 1")), Catch::Contains("duplicate node id 1"));
  // Host-key checking and batch mode stay on, however the option is spelt.
  for (const std::string option : {"StrictHostKeyChecking=no", "stricthostkeychecking no",
                                   "UserKnownHostsFile=/dev/null", "BatchMode=no"}) {
    INFO(option);
    CHECK_THAT(errorOf(replace("user: kafka,", "user: kafka, options: [\"" + option + "\"],")),
               Catch::Contains("clusters[0].inventory[1].ssh.options: '" + option +
                               "' would let kfaild talk to a host"));
  }
  CHECK(parseConfig(replace("user: kafka,", "user: kafka, options: [StrictHostKeyChecking=yes],"))
            .clusters[0]
            .inventory[1]
            .ssh->options.size() == 1);
}

TEST_CASE("a cluster's objectives and regression policy parse, with defaults when it names none",
          "[unit][config][verdict]") {
  const auto plain = parseConfig(kArticle, "test.yaml");
  CHECK(kfaild::analysis::toJson(plain.clusters[0].objectives) ==
        kfaild::analysis::toJson(kfaild::analysis::defaultObjectives()));
  CHECK(plain.clusters[0].regression.window == 5);

  std::string yaml = kArticle;
  yaml += R"(    objectives:
      max_ack_stall_s: 12
      by_role: {leader: {max_ack_stall_s: 15.5}}
      by_fault: {stop: {max_receive_stall_s: 2, by_role: {sole_replica: {max_ack_stall_s: 40}}}}
      max_lost: 0
      fail_on_regression: true
    regression: {window: 8, factor: 2, min_runs: 4}
)";
  const auto c = parseConfig(yaml, "test.yaml").clusters[0];
  CHECK(c.objectives.stall.max_ack_stall_s == 12.0);
  CHECK_FALSE(c.objectives.stall.max_receive_stall_s);  // objectives given: no defaults beneath
  CHECK(c.objectives.by_role.at("leader").max_ack_stall_s == 15.5);
  CHECK(c.objectives.by_fault.at("stop").stall.max_receive_stall_s == 2.0);
  CHECK(c.objectives.by_fault.at("stop").by_role.at("sole_replica").max_ack_stall_s == 40.0);
  CHECK(c.objectives.max_lost == 0);
  CHECK(c.objectives.fail_on_regression == true);
  CHECK(c.regression.window == 8);
  CHECK(c.regression.factor == 2.0);
  CHECK(c.regression.min_runs == 4);

  std::string none = kArticle;
  none += "    objectives: {}\n";
  CHECK(kfaild::analysis::toJson(parseConfig(none, "test.yaml").clusters[0].objectives).empty());
}

TEST_CASE("an unknown or wrong objective key in the configuration names the key",
          "[unit][config][verdict]") {
  const auto with = [](const std::string& tail) { return errorOf(std::string(kArticle) + tail); };
  CHECK_THAT(with("    objectives: {max_ack_stal_s: 12}\n"),
             Catch::Contains("clusters[0].objectives.max_ack_stal_s: unknown key"));
  CHECK_THAT(with("    objectives: {by_fault: {kil: {max_ack_stall_s: 1}}}\n"),
             Catch::Contains("clusters[0].objectives.by_fault.kil: unknown key"));
  CHECK_THAT(with("    objectives: {max_ack_stall_s: twelve}\n"),
             Catch::Contains("clusters[0].objectives.max_ack_stall_s: must be a number"));
  CHECK_THAT(with("    objectives: {max_lost: 0, max_lost: 1}\n"), Catch::Contains("max_lost"));
  CHECK_THAT(with("    regression: {factor: 0.5}\n"),
             Catch::Contains("clusters[0].regression.factor: must be"));
  CHECK_THAT(with("    regression: {windows: 5}\n"),
             Catch::Contains("clusters[0].regression.windows: unknown key"));
}

TEST_CASE(
    "where a node's gray faults act: address, netns and fill_dir, each only where it means "
    "something",
    "[unit][config]") {
  const std::string base = std::string(kArticle) + R"(
    inventory:
      - id: 1
        address: 10.77.19.1
        gray_faults: true
        netns: kfl19000-n1
        fill_dir: .lab/node1/disk
        local: {pid_file: /tmp/b.pid, start_command: [/bin/true]}
      - id: 2
        ssh: {host: k2.example, pid_command: "cat /run/kafka.pid", start_command: "systemctl start kafka"}
        gray_faults: true
        gray_helper: [sudo, -n, /opt/kfaild/kfaild-gray]
        fill_dir: /var/lib/kafka-fill
      - id: 3
        docker: {container: kbf-k3-1}
)";
  const auto c = parseConfig(base);
  const auto& inv = c.clusters[0].inventory;
  REQUIRE(inv.size() == 3);
  CHECK(inv[0].address == "10.77.19.1");
  CHECK(inv[0].netns == "kfl19000-n1");
  // Relative to kfaild's working directory, made absolute: the filler's shell runs elsewhere.
  CHECK(inv[0].fill_dir == (std::filesystem::current_path() / ".lab/node1/disk").string());
  CHECK(inv[1].address == "k2.example");  // an ssh node's host by default
  CHECK(inv[1].fill_dir == "/var/lib/kafka-fill");
  CHECK(inv[2].address.empty());
  CHECK(inv[0].gray_faults);
  CHECK(inv[0].gray_helper.empty());
  CHECK(inv[1].gray_helper == std::vector<std::string>{"sudo", "-n", "/opt/kfaild/kfaild-gray"});
  CHECK_FALSE(inv[2].gray_faults);

  auto replace = [&](const std::string& from, const std::string& to) {
    auto s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK_THAT(errorOf(replace("netns: kfl19000-n1", "netns: \"n1; reboot\"")),
             Catch::Contains("clusters[0].inventory[0].netns: not a network namespace name"));
  CHECK_THAT(errorOf(replace("address: 10.77.19.1", "address: \"10.0.0.1 && reboot\"")),
             Catch::Contains("clusters[0].inventory[0].address"));
  CHECK_THAT(errorOf(replace("docker: {container: kbf-k3-1}",
                             "docker: {container: kbf-k3-1}\n        netns: x")),
             Catch::Contains("clusters[0].inventory[2].netns: only for a local node"));
  CHECK_THAT(errorOf(replace("docker: {container: kbf-k3-1}",
                             "docker: {container: kbf-k3-1}\n        fill_dir: /x")),
             Catch::Contains("clusters[0].inventory[2].fill_dir: not for a docker node"));
  CHECK_THAT(errorOf(replace("fill_dir: /var/lib/kafka-fill", "fill_dir: kafka-fill")),
             Catch::Contains(
                 "clusters[0].inventory[1].fill_dir: an absolute directory on the node's host"));
  // Gray faults are opt-in: what places them needs the node's gray_faults: true.
  CHECK_THAT(
      errorOf(replace("        gray_faults: true\n        netns", "        netns")),
      Catch::Contains(
          "clusters[0].inventory[0].netns: places gray faults, which this node has not opted in "
          "to: add gray_faults: true"));
  CHECK_THAT(
      errorOf(replace("        gray_faults: true\n        gray_helper", "        gray_helper")),
      Catch::Contains("clusters[0].inventory[1].gray_helper: only with gray_faults: true"));
  CHECK_THAT(errorOf(replace("gray_faults: true", "gray_faults: yes please")),
             Catch::Contains("clusters[0].inventory[0].gray_faults: must be true or false"));
}

TEST_CASE(
    "a client secret comes from an environment variable or a file readable by its owner only, "
    "never the "
    "YAML, and each mistake names its key",
    "[unit][config]") {
  kfaild::testing::TempDir dir;
  const auto secret = dir / "kafka-password";
  std::ofstream(secret) << "s3cret-from-file\n";
  std::filesystem::permissions(
      secret, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ::setenv("KFAILD_TEST_SASL_USER", "probe-user", 1);
  ::unsetenv("KFAILD_TEST_UNSET");
  std::string base = kArticle;
  const auto with = [&](const std::string& client) {
    auto text = base;
    text.replace(text.find("      security.protocol: plaintext"),
                 std::string("      security.protocol: plaintext").size(), client);
    return text;
  };
  const auto c =
      parseConfig(with("      security.protocol: sasl_plaintext\n"
                       "      sasl.username: ${env:KFAILD_TEST_SASL_USER}\n"
                       "      sasl.password_file: " +
                       secret.string()));
  const auto& client = c.clusters[0].client;
  CHECK(client.at("sasl.username") == "probe-user");
  CHECK(client.at("sasl.password") == "s3cret-from-file");
  CHECK_FALSE(client.count("sasl.password_file"));

  CHECK(errorOf(with("      sasl.password: ${env:KFAILD_TEST_UNSET}")) ==
        "test.yaml: clusters[0].client.sasl.password: names the environment variable "
        "KFAILD_TEST_UNSET, which is not set");
  CHECK_THAT(errorOf(with("      sasl.password: ${env:BAD NAME}")),
             Catch::StartsWith(
                 "test.yaml: clusters[0].client.sasl.password: ${env:NAME} needs a variable name"));
  CHECK(errorOf(with("      sasl.password: x\n      sasl.password_file: " + secret.string())) ==
        "test.yaml: clusters[0].client.sasl.password_file: and clusters[0].client.sasl.password "
        "are both set: keep one");
  CHECK_THAT(errorOf(with("      sasl.password_file: " + (dir / "missing").string())),
             Catch::StartsWith("test.yaml: clusters[0].client.sasl.password_file: cannot read "));
  std::filesystem::permissions(secret, std::filesystem::perms::group_read,
                               std::filesystem::perm_options::add);
  const auto open_error = errorOf(with("      sasl.password_file: " + secret.string()));
  CHECK_THAT(open_error,
             Catch::Contains(secret.string() + " has mode 0640, more than owner read and write"));
  // No form of the secret ever reaches an error.
  CHECK_THAT(open_error, !Catch::Contains("s3cret"));
}

}  // namespace config_test
