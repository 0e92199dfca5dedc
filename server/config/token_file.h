#pragma once

// API token files: the operator's and the viewer's bearer tokens (http.token_file,
// http.viewer_token_file), and the one kfaild makes for itself at first start when no
// http.token_file is configured (<directory of storage.path>/api-token).
//
// A token file must be readable by its owner only: one that group or others can read is refused,
// because whoever reads it can kill brokers. A token is the file's first line: 16 to 4096
// printable ASCII characters, no spaces. Messages never contain the token.

#include <string>

#include "server/common/result.h"

namespace kfaild::config {

inline constexpr const char* kGeneratedTokenName = "api-token";

// Reads and checks a token file. Error messages name the path and say what is wrong (never the
// token); the caller prefixes the configuration key.
Result<std::string> readTokenFile(const std::string& path);

struct GeneratedToken {
  std::string path;
  std::string token;
  bool created = false;  // false: an earlier start made it
};

// The generated token for a database at `storage_path`: read when the file exists (with the
// checks of readTokenFile), else created (O_EXCL, mode 0600) with 256 random bits as hex.
Result<GeneratedToken> ensureGeneratedToken(const std::string& storage_path);

}  // namespace kfaild::config
