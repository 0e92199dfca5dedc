#pragma once

// The configuration file as kfaild reads it at start: the Config (config.h), and what kfaild has
// to say about the file itself.

#include <string>
#include <vector>

#include "server/config/config.h"

namespace kfaild::config {

struct LoadedConfig {
  Config config;
  // One line per secret given inline rather than as ${env:NAME} or `<key>_file` (a receiver's
  // url or header, a client property that holds a credential: sasl.password, ssl.key.password,
  // ...) when the file is readable by its group or others. Each names the key and the file,
  // never the value; kfaild logs them as warnings at start.
  std::vector<std::string> warnings;
};

// As loadConfigFile, with the warnings. The mode is the one of the file read (fstat of the
// descriptor read). Throws ConfigError.
LoadedConfig loadConfigFileWithWarnings(const std::string& path);

}  // namespace kfaild::config
