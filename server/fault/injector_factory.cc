#include "server/fault/injector_factory.h"

#include "server/fault/command_injector.h"
#include "server/fault/docker_injector.h"
#include "server/fault/kafka_log.h"
#include "server/fault/local_injector.h"
#include "server/fault/ssh_injector.h"

namespace kfaild::fault {

std::unique_ptr<Injector> makeInjector(const config::NodeConfig& node, const common::Clock& clock,
                                       const std::string& gray_instance) {
  const std::string key = "inventory node " + std::to_string(node.id);
  const auto zone = logZoneFromConfig(node.log_timezone);
  if (!zone) {
    throw config::ConfigError(key + ": log_timezone must be UTC or local, got '" +
                              node.log_timezone + "'");
  }
  const int targets = int{node.docker.has_value()} + int{node.ssh.has_value()} +
                      int{node.local.has_value()} + int{node.command.has_value()};
  if (targets != 1) {
    throw config::ConfigError(key + ": exactly one of docker, ssh, local, command must be set");
  }
  if (node.command) {
    if (node.gray_faults) throw config::ConfigError(key + ": a command node has no gray faults");
    return std::make_unique<CommandInjector>(*node.command, node.id, node.address, *zone, clock);
  }
  // Gray faults act where the node's config says (inventory[].netns, fill_dir), and only on a
  // node that opted in (gray_faults): elsewhere kfaild-gray is never run and they are refused.
  if (node.docker) {
    auto injector = std::make_unique<DockerInjector>(*node.docker, *zone, clock);
    if (node.gray_faults) injector->placeGrayFaults(gray_instance, node.gray_helper);
    return injector;
  }
  const GrayPlacement placement{.netns = node.netns,
                                .fill_dir = node.fill_dir,
                                .instance = gray_instance,
                                .helper = node.gray_helper};
  if (node.ssh) {
    auto injector = std::make_unique<SshInjector>(*node.ssh, *zone, clock);
    if (node.gray_faults) injector->placeGrayFaults(placement);
    return injector;
  }
  auto injector = std::make_unique<LocalInjector>(*node.local, *zone, clock);
  if (node.gray_faults) injector->placeGrayFaults(placement);
  return injector;
}

}  // namespace kfaild::fault
