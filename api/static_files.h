#pragma once

// Serves the dashboard's build output (web/dist) from memory: `/` is index.html, every other
// file is served under its own path ("/assets/index-3f2a.js", "/favicon.svg"). The directory is
// read once, at load(): only the files found then can ever be served, so no request path reaches
// the file system. Hashed assets are cacheable forever; index.html is revalidated every time.
//
// Thread-safety: load() and registerOn() during set-up; the handlers only read.

#include <filesystem>
#include <map>
#include <string>

#include "api/http_message.h"
#include "api/router.h"
#include "server/common/result.h"

namespace kfaild::api {

// The dashboard installed with kfaild (cmake --install, the Debian package):
// <prefix>/share/kfaild/web for <prefix>/bin/kfaild, when it holds an index.html; else empty.
std::string installedWebDir(const std::filesystem::path& executable);

class StaticFiles {
 public:
  // Reads every regular file of `directory` and of its `assets/` subdirectory (others are
  // ignored). Fails when the directory or its index.html cannot be read.
  [[nodiscard]] Status load(const std::string& directory);

  // GET /, /{file}, /assets/{file}. Routes with more literal segments (/healthz, /api/...) win.
  void registerOn(Router& router) const;

  std::size_t fileCount() const { return files_.size(); }
  std::size_t totalBytes() const;

 private:
  struct File {
    std::string content_type;
    std::string body;
  };
  Response serve(const Request& request, const std::string& name) const;

  std::map<std::string, File> files_;  // by path below the directory: "index.html", "assets/x.js"
};

// The Content-Type for a file name, by extension; application/octet-stream when unknown.
std::string contentTypeFor(const std::string& name);

}  // namespace kfaild::api
