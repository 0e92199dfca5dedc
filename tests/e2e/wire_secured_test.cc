// The wire client (probe.client: wire) on the secured lab (KFAILD_LAB_SECURITY, lab/README.md):
// over SASL_SSL with each mechanism the brokers enable, and over TLS with a client certificate,
// its sends acked and read back; a wrong password refused by every broker as the client's own
// problem; and a kill of broker 1 measured through it as on the plaintext lab.

#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <span>

#include "server/common/clock.h"
#include "server/kafka/quorum.h"
#include "server/kafka/security.h"
#include "server/kafka/tls.h"
#include "server/probe/wire_client.h"
#include "tests/e2e/e2e_support.h"

namespace wire_secured_test {

using namespace kfaild;
using namespace kfaild::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// The lab's client properties (`lab client`), the password read from its file as kfaild's
// configuration reads a `_file` key, with `override` replacing keys.
std::map<std::string, std::string> labClient(const std::map<std::string, std::string>& override) {
  std::map<std::string, std::string> client;
  const auto properties = json::parse(testing::labOutput("client"));
  for (const auto& [key, value] : properties.items()) {
    client[key] = value.get<std::string>();
  }
  if (const auto file = client.find("sasl.password_file"); file != client.end()) {
    auto password = readAll(file->second);
    while (!password.empty() && password.back() == '\n') password.pop_back();
    client["sasl.password"] = password;
    client.erase(file);
  }
  for (const auto& [key, value] : override) client[key] = value;
  return client;
}

std::string clientYaml(const std::map<std::string, std::string>& client) {
  std::string out = "    client:\n";
  for (const auto& [key, value] : client) out += "      " + key + ": \"" + value + "\"\n";
  return out;
}

// What a wire client of its own saw on `topic`'s three partitions: the acks of one message per
// partition and whether each came back, or the refusals.
struct Exchange {
  std::vector<probe::WireAck> acks;
  int read_back = 0;  // partitions whose message was read back
  probe::WireStats stats;
};

Exchange sendAndReadBack(const std::string& topic, const std::map<std::string, std::string>& client,
                         std::chrono::seconds patience) {
  auto security = kafka::clientSecurity(client);
  REQUIRE(security);
  probe::WireClientOptions options;
  for (auto& server : kafka::bootstrapServers(testing::labBootstrap(), nullptr))
    options.bootstrap.emplace_back(server.host, server.port);
  if (security->tls()) {
    auto tls = kafka::TlsContext::create(*security);
    REQUIRE(tls);
    options.tls = *tls;
  }
  options.security = *security;
  const std::string marker = "wire-secured-" + std::to_string(std::random_device{}());
  std::mutex mutex;
  Exchange out;
  std::set<std::size_t> seen;
  common::SystemClock clock;
  probe::WireClient wire(
      options, clock,
      [&](std::span<const probe::WireAck> acks, common::Instant) {
        std::lock_guard lock(mutex);
        out.acks.insert(out.acks.end(), acks.begin(), acks.end());
      },
      [&](std::span<const probe::WireRecord> records, common::Instant) {
        std::lock_guard lock(mutex);
        for (const auto& r : records) {
          if (std::string(r.value.begin(), r.value.end()) == marker) seen.insert(r.slot);
        }
      });
  // Read from the start: the topic is the test's own, seconds old.
  wire.start({{topic, 0, 0, 0}, {topic, 1, 1, 0}, {topic, 2, 2, 0}}, 10s);
  bool sent = false;
  wire.tickOnIoThread(
      [&](std::vector<probe::WireSend>& sends) {
        for (std::size_t slot = 0; slot < 3 && !sent; ++slot) {
          if (wire.authenticationFailure(slot) != nullptr) continue;
          sends.push_back({slot, 1, {marker.begin(), marker.end()}, clock.now().wall / 1000});
        }
        sent = sent || !sends.empty();
        return clock.monoNow() + 100'000;
      },
      clock.monoNow());
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mutex);
      if (seen.size() == 3) break;
    }
    std::this_thread::sleep_for(100ms);
  }
  wire.stopTicking();
  wire.stop();
  out.read_back = static_cast<int>(seen.size());
  out.stats = wire.stats();
  return out;
}

}  // namespace

TEST_CASE(
    "on the SASL_SSL lab the wire probe acks and reads back with PLAIN, SCRAM-SHA-256 and "
    "SCRAM-SHA-512, a wrong password is its own refusal, and a kill of broker 1 is measured "
    "through it",
    "[e2e][secured]") {
  testing::SecuredLabEnv env("sasl_ssl");
  REQUIRE(testing::setLabSecurity("sasl_ssl"));
  auto options = Lab::options("", false);
  options.probe_client = "wire";
  options.cluster_yaml = clientYaml(labClient({}));
  Lab lab(options);
  addLabInventory(lab, {1, 2, 3, 100});
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  const auto probe = kfaild.get("/api/v1/clusters/lab")["probe"];
  INFO("probe: " << probe.dump());
  REQUIRE(probe["client_settings"]["probe.client"] == "wire");
  CHECK(probe["problem"].is_null());

  for (const auto* mechanism : {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}) {
    const auto seen = sendAndReadBack(lab.topic, labClient({{"sasl.mechanism", mechanism}}), 20s);
    INFO(mechanism << ": problem " << seen.stats.problem);
    CHECK(seen.read_back == 3);
    CHECK(seen.stats.authentication_failures == 0);
    for (const auto& ack : seen.acks) CHECK(ack.error == 0);
  }
  {
    const auto refused = sendAndReadBack(lab.topic, labClient({{"sasl.password", "wrong"}}), 3s);
    INFO("problem: " << refused.stats.problem);
    CHECK(refused.stats.authentication_failures >= 1);
    CHECK_THAT(refused.stats.problem,
               Catch::Contains("authentication failed") && Catch::Contains("invalid credentials"));
    CHECK(refused.acks.empty());  // refused before it is asked: nothing sent
    CHECK(refused.read_back == 0);
  }

  const auto drill = runDrillToDone(
      kfaild, R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":3}})");
  const auto& run = drill["runs"][0];
  const auto& analysis = run["analysis"];
  INFO("run: " << run.dump().substr(0, 12000));
  CHECK(run["probe_client"]["probe.client"] == "wire");
  REQUIRE(analysis["departure"] == "fenced");
  const auto fault_us = analysis["fault_us"].get<std::int64_t>();
  const auto detection = analysis["departure_at_us"].get<std::int64_t>() - fault_us;
  for (int p = 0; p < 3; ++p) {
    const auto& part = partitionOf(analysis, lab.topic, p);
    INFO("partition " << p);
    CHECK(part["ack"]["outcome"] == "stall");
    CHECK(ackStall(part) < detection + 5'000'000);
    CHECK(part["lost"] == 0);
    std::printf("secured lab, wire client, kill of broker 1: %s-%d role %s ack stall %.2f s\n",
                lab.topic.c_str(), p, part["role"].get<std::string>().c_str(),
                static_cast<double>(ackStall(part)) / 1e6);
  }
  std::printf("secured lab, wire client, kill of broker 1: detection %.2f s, verdict %s\n",
              static_cast<double>(detection) / 1e6, drill["verdict"].get<std::string>().c_str());
}

TEST_CASE(
    "on the mutual-TLS lab the wire probe presents its client certificate, acks and reads back, "
    "and without the certificate the brokers refuse it as its own problem",
    "[e2e][secured]") {
  testing::SecuredLabEnv env("mtls");
  REQUIRE(testing::setLabSecurity("mtls"));
  auto options = Lab::options("", false);
  options.probe_client = "wire";
  options.cluster_yaml = clientYaml(labClient({}));
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  const auto probe = kfaild.get("/api/v1/clusters/lab")["probe"];
  INFO("probe: " << probe.dump());
  REQUIRE(probe["client_settings"]["probe.client"] == "wire");
  CHECK(probe["problem"].is_null());

  const auto seen = sendAndReadBack(lab.topic, labClient({}), 20s);
  CHECK(seen.read_back == 3);
  auto without = labClient({});
  without.erase("ssl.certificate.location");
  without.erase("ssl.key.location");
  const auto refused = sendAndReadBack(lab.topic, without, 3s);
  INFO("problem: " << refused.stats.problem);
  CHECK(refused.stats.authentication_failures >= 1);
  CHECK_THAT(refused.stats.problem, Catch::Contains("TLS"));
  CHECK(refused.read_back == 0);
}

}  // namespace wire_secured_test
