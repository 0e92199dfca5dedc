#include "server/config/token_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "server/config/config.h"

namespace kfaild::config {
namespace {

Error tokenError(std::string message) {
  return Error{std::make_error_code(std::errc::invalid_argument), std::move(message)};
}

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

Result<std::string> readPrivateFirstLine(const std::string& path, std::size_t max_bytes) {
  // One descriptor for every check and the read: a file swapped between a stat() and an open()
  // cannot slip through, and O_NOFOLLOW refuses a symlink planted in place of the file (a link to
  // a file another user controls would hand them the secret, and a link to the operator's token
  // file would send that token wherever this secret goes).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP)
      return tokenError(path + " is a symbolic link; give the path of the file itself");
    return tokenError("cannot read " + path + ": " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) return tokenError("cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return tokenError(path + " is not a regular file");
  if (st.st_uid != ::geteuid()) {
    return tokenError(path + " is owned by uid " + std::to_string(st.st_uid) +
                      ", not by kfaild's user (uid " + std::to_string(::geteuid()) +
                      "); whoever owns it can change the secret in it: chown it");
  }
  if ((st.st_mode & 07177) != 0) {
    return tokenError(
        path + " has mode " + octal(st.st_mode) +
        ", more than owner read and write; whoever reads it holds the secret: chmod 600 " + path);
  }
  std::string content(max_bytes, '\0');
  std::size_t filled = 0;
  while (filled < content.size()) {
    const auto got = ::read(fd, content.data() + filled, content.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return tokenError("cannot read " + path + ": " + std::strerror(errno));
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
    if (content.find('\n') < filled) break;
  }
  content.resize(filled);
  content.resize(std::min(content.size(), content.find('\n')));
  if (!content.empty() && content.back() == '\r') content.pop_back();
  return content;
}

Result<std::string> readTokenFile(const std::string& path) {
  // At most the longest token allowed plus a line end and one more byte, to tell a longer one.
  auto line = readPrivateFirstLine(path, 4096 + 3);
  if (!line) return line.error();
  std::string token = std::move(*line);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t'))
    token.pop_back();
  if (token.size() < 16)
    return tokenError("the token in " + path + " must be at least 16 characters");
  if (token.size() > 4096)
    return tokenError("the token in " + path + " must be at most 4096 characters");
  for (const unsigned char ch : token) {
    if (ch <= 0x20 || ch >= 0x7f)
      return tokenError("the token in " + path + " must be printable ASCII without spaces");
  }
  return token;
}

Result<GeneratedToken> ensureGeneratedToken(const std::string& storage_path) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(storage_path).parent_path();
  GeneratedToken out;
  out.path = (dir.empty() ? fs::path(kGeneratedTokenName) : dir / kGeneratedTokenName).string();
  const int fd = ::open(out.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno != EEXIST)
      return tokenError("cannot create " + out.path + ": " + std::strerror(errno));
    auto token = readTokenFile(out.path);
    if (!token) return token.error();
    out.token = std::move(*token);
    return out;
  }
  std::array<unsigned char, 32> random{};
  std::size_t filled = 0;
  while (filled < random.size()) {
    const auto got = ::getrandom(random.data() + filled, random.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      ::close(fd);
      ::unlink(out.path.c_str());
      return tokenError(std::string("getrandom: ") + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  for (const auto byte : random) {
    out.token.push_back(kHex[byte >> 4]);
    out.token.push_back(kHex[byte & 0x0f]);
  }
  const std::string line = out.token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                       ::fsync(fd) == 0;
  ::close(fd);
  if (!written) {
    ::unlink(out.path.c_str());
    return tokenError("cannot write " + out.path + ": " + std::strerror(errno));
  }
  out.created = true;
  return out;
}

}  // namespace kfaild::config
