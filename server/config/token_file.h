#pragma once

// Files that hold a secret: the API token files (the operator's and the viewer's bearer tokens,
// http.token_file and http.viewer_token_file, and the one kfaild makes for itself at first start
// when no http.token_file is configured, <directory of storage.path>/api-token), and the
// `<key>_file` secrets of the configuration (a client property's, a receiver's url or header).
//
// Every one is read by readPrivateFirstLine: a file that is not kfaild's user's own, that group
// or others can read, or that is reached through a symbolic link is refused, because whoever
// reads or replaces it holds the secret (an operator token kills brokers; a SASL password is the
// cluster's client). A token is the file's first line: 16 to 4096 printable ASCII characters, no
// spaces. Messages never contain the secret.

#include <string>

#include "server/common/result.h"

namespace kfaild::config {

inline constexpr const char* kGeneratedTokenName = "api-token";

// The first line of the file at `path`, without its line end ("\n" or "\r\n"), read from one
// descriptor opened with O_NOFOLLOW and checked with fstat on it (no window between check and
// read): a regular file, owned by kfaild's effective user, mode 0600 or 0400. At most
// `max_bytes` bytes are read: a first line that long or longer comes back cut at `max_bytes`,
// for the caller to refuse. Error messages name the path and say what is wrong (never the
// content); the caller prefixes the configuration key.
Result<std::string> readPrivateFirstLine(const std::string& path, std::size_t max_bytes);

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
