#pragma once

// Broker 1 of the lab for the fault injectors' end-to-end tests. A LabBrokerOne checks on
// construction that the lab is up, and on destruction — also when an assertion failed half-way
// — brings broker 1 back to how the lab had it: a running, unfrozen JVM in process mode,
// registered, unfenced and back in the ISR of every partition of its own test topic (replica
// assignment 1:2:3,2:3:1,3:1:2, as the article's `orders`). The lab is the one `lab/lab`
// finds (KFAILD_LAB_DIR / KFAILD_LAB_PORT_BASE are honoured).

#include <signal.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "server/kafka/admin.h"
#include "server/kafka/client.h"
#include "server/kafka/metadata.h"
#include "tests/support/lab.h"
#include "tests/support/paths.h"

namespace kfaild::testing {

// Runs `command` with /bin/sh; returns its exit code and fills `out` with its stdout.
inline int shellCommand(const std::string& command, std::string* out = nullptr) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return -1;
  std::array<char, 4096> buf{};
  std::string text;
  while (std::fgets(buf.data(), buf.size(), pipe.get()) != nullptr) text += buf.data();
  if (out != nullptr) *out = text;
  const int status = pclose(pipe.release());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// "KEY=value" lines printed by scripts/drill-env/*-up → the value of `key`, or "".
inline std::string assignment(const std::string& text, const std::string& key) {
  const auto at = text.find(key + "=");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n')) return {};
  const auto end = text.find('\n', at);
  return text.substr(at + key.size() + 1,
                     (end == std::string::npos ? text.size() : end) - at - key.size() - 1);
}

inline std::string trimmedOutput(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

template <typename Pred>
bool eventually(std::chrono::milliseconds limit, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return pred();
}

// The lab's environment for a command run elsewhere (through ssh): "" for the default lab.
inline std::string labEnvironment() {
  std::string env;
  for (const char* name : {"KFAILD_LAB_DIR", "KFAILD_LAB_PORT_BASE", "KFAILD_CACHE"}) {
    if (const char* value = std::getenv(name)) env += std::string(name) + "=" + value + " ";
  }
  return env;
}

inline std::string labScript() {
  return std::string(KFAILD_SOURCE_DIR) + "/lab/lab";
}
inline std::string labPidFile(int node) {
  return trimmedOutput(labOutput("pidfile " + std::to_string(node)));
}
inline std::string labLogDir(int node) {
  return (std::filesystem::path(labPidFile(node)).parent_path() / "logs").string();
}

class LabBrokerOne {
 public:
  enum class Mode { process, container };

  explicit LabBrokerOne(Mode mode = Mode::process) {
    REQUIRE(lab("wait --timeout 180") == 0);
    kafka::ClientOptions options;
    options.bootstrap = labBootstrap();
    options.client_id = "kfaild-fault-e2e";
    auto handle =
        kafka::createClient(RD_KAFKA_PRODUCER, options, {{"allow.auto.create.topics", "false"}});
    REQUIRE(handle);
    admin_ = std::move(*handle);
    topic_ = "fault-e2e-" + std::to_string(std::random_device{}() % 1'000'000);
    kafka::NewTopic spec;
    spec.name = topic_;
    spec.replica_assignment = {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}};
    REQUIRE(kafka::createTopic(admin_.get(), spec, 15000));
    REQUIRE(waitInIsr(std::chrono::seconds(60)));
    if (mode == Mode::container) {
      REQUIRE(lab("stop 1") == 0);
      REQUIRE(lab("start 1 --container --wait --timeout 180") == 0);
      REQUIRE(waitInIsr(std::chrono::seconds(60)));
    }
  }

  ~LabBrokerOne() {
    try {
      restore();
    } catch (...) {
      // A destructor must not throw; restore() reports through Catch's WARN.
    }
  }

  LabBrokerOne(const LabBrokerOne&) = delete;
  LabBrokerOne& operator=(const LabBrokerOne&) = delete;

  const std::string& topic() const { return topic_; }

  // True once broker 1 is in the ISR of all three partitions of the test topic.
  bool waitInIsr(std::chrono::seconds limit) {
    return eventually(limit, [&] {
      auto md = kafka::fetchMetadata(admin_.get(), {topic_}, 2000);
      if (!md || !md->hasBroker(1) || md->topic(topic_) == nullptr) return false;
      const auto& parts = md->topic(topic_)->partitions;
      if (parts.size() != 3) return false;
      for (const auto& p : parts) {
        if (std::find(p.isr.begin(), p.isr.end(), 1) == p.isr.end()) return false;
      }
      return true;
    });
  }

  // Broker 1 as the lab's status sees it: {"alive", "paused", "container", "pid", ...}.
  static nlohmann::json status() {
    const auto doc = nlohmann::json::parse(labOutput("status --json"), nullptr, false);
    if (doc.is_discarded() || !doc.contains("nodes")) return {};
    for (const auto& n : doc["nodes"]) {
      if (n.value("node", 0) == 1) return n;
    }
    return {};
  }

 private:
  void restore() {
    const auto st = status();
    const bool in_container = st.value("container", false);
    if (st.value("paused", false) && st["pid"].is_number()) {
      ::kill(st["pid"].get<int>(), SIGCONT);  // SIGSTOP by a pause drill
    }
    // Back to process mode: `lab stop` thaws a frozen container first.
    if (in_container) lab("stop 1");
    shellCommand("command -v podman >/dev/null && podman rm --force --ignore " +
                 trimmedOutput(labOutput("container 1")) + " >/dev/null 2>&1");
    if (lab("start 1 --wait --timeout 180") != 0) WARN("could not restart broker 1 of the lab");
    if (lab("wait --timeout 180") != 0) WARN("the lab's brokers are not all unfenced");
    if (!waitInIsr(std::chrono::seconds(120))) WARN("broker 1 did not return to the ISR");
  }

  kafka::Handle admin_;
  std::string topic_;
};

}  // namespace kfaild::testing
