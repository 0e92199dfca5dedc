// kfaild: reads its options and configuration, then runs a Daemon (server/daemon) until SIGTERM
// or SIGINT.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "server/config/config.h"
#include "server/config/config_file.h"
#include "server/daemon/daemon.h"
#include "server/kafka/client.h"

namespace {

constexpr const char* kUsage =
    "usage: kfaild --config FILE [--client-log-dir DIR] [--check-config] [--version]\n"
    "  --config FILE         YAML configuration (see deploy/examples/)\n"
    "  --client-log-dir DIR  append every librdkafka log line to DIR/<cluster>-client.log\n"
    "  --check-config        validate the configuration and exit\n"
    "  --version             print versions and exit\n";

struct Options {
  std::string config_path;
  std::string client_log_dir;
  bool check_only = false;
};

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--config" && i + 1 < argc) {
      options.config_path = argv[++i];
    } else if (arg == "--client-log-dir" && i + 1 < argc) {
      options.client_log_dir = argv[++i];
    } else if (arg == "--check-config") {
      options.check_only = true;
    } else if (arg == "--version") {
      std::cout << "kfaild " << KFAILD_VERSION << " (librdkafka "
                << kfaild::kafka::librdkafkaVersion() << ")\n";
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "kfaild: unknown or incomplete argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (options.config_path.empty()) {
    std::cerr << "kfaild: --config is required\n" << kUsage;
    return 2;
  }

  kfaild::config::Config config;
  std::vector<std::string> secret_warnings;
  try {
    auto loaded = kfaild::config::loadConfigFileWithWarnings(options.config_path);
    config = std::move(loaded.config);
    secret_warnings = std::move(loaded.warnings);
  } catch (const kfaild::config::ConfigError& e) {
    std::cerr << "kfaild: configuration error: " << e.what() << '\n';
    return 2;
  }
  if (options.check_only) {
    for (const auto& warning : secret_warnings) std::cerr << "kfaild: warning: " << warning << '\n';
    std::cout << options.config_path << ": ok (" << config.clusters.size() << " cluster(s))\n";
    return 0;
  }

  spdlog::set_default_logger(spdlog::stderr_color_mt("kfaild"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  spdlog::info("kfaild {} starting, librdkafka {}", KFAILD_VERSION,
               kfaild::kafka::librdkafkaVersion());
  for (const auto& warning : secret_warnings) spdlog::warn("config: {}", warning);

  // Signals are taken synchronously by the main thread; every thread started after this inherits
  // the blocked mask, so SIGTERM never interrupts a probe or writer thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto started = kfaild::daemon::Daemon::start(config, {options.client_log_dir});
  if (auto* failure = std::get_if<kfaild::daemon::StartFailure>(&started)) {
    if (failure->exit_status == kfaild::daemon::Daemon::kConfigError) {
      std::cerr << "kfaild: configuration error: " << failure->message << '\n';
    } else {
      spdlog::critical("{}", failure->message);
    }
    return failure->exit_status;
  }
  auto& daemon = *std::get<std::unique_ptr<kfaild::daemon::Daemon>>(started);
  daemon.runUntil(signals);
  return daemon.stop();
}
