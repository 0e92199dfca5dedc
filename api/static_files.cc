#include "api/static_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "api/errc.h"

namespace kfaild::api {

std::string installedWebDir(const std::filesystem::path& executable) {
  const auto dir = executable.parent_path().parent_path() / "share" / "kfaild" / "web";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "index.html", ec)) return {};
  return dir.lexically_normal().string();
}
namespace {

namespace fs = std::filesystem;

std::optional<std::string> readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return out.str();
}

}  // namespace

std::string contentTypeFor(const std::string& name) {
  static const std::map<std::string, std::string> kTypes = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
  };
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return "application/octet-stream";
  const auto found = kTypes.find(name.substr(dot));
  return found == kTypes.end() ? "application/octet-stream" : found->second;
}

Status StaticFiles::load(const std::string& directory) {
  std::error_code ec;
  for (const auto& sub : {std::string(), std::string("assets")}) {
    const fs::path dir = sub.empty() ? fs::path(directory) : fs::path(directory) / sub;
    if (!sub.empty() && !fs::is_directory(dir, ec)) continue;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      const auto name = it->path().filename().string();
      auto body = readFile(it->path());
      if (!body) {
        return Error{make_error_code(errc::invalid_options),
                     "web_dir: cannot read " + it->path().string()};
      }
      files_[sub.empty() ? name : sub + "/" + name] = {contentTypeFor(name), std::move(*body)};
    }
    if (ec) {
      return Error{make_error_code(errc::invalid_options),
                   "web_dir: cannot list " + dir.string() + ": " + ec.message()};
    }
  }
  if (!files_.contains("index.html")) {
    return Error{make_error_code(errc::invalid_options),
                 "web_dir: " + directory +
                     " has no index.html (build the dashboard: cd web && npm ci && npm run build)"};
  }
  return okStatus();
}

std::size_t StaticFiles::totalBytes() const {
  std::size_t total = 0;
  for (const auto& [name, file] : files_) total += file.body.size();
  return total;
}

void StaticFiles::registerOn(Router& router) const {
  // The page must load before it can ask for a token.
  const RouteOptions open{RouteAccess::kPublic, false};
  router.add(
      "GET", "/", [this](const Request& request) { return serve(request, "index.html"); }, open);
  router.add(
      "GET", "/{file}",
      [this](const Request& request) { return serve(request, request.params.at("file")); }, open);
  router.add(
      "GET", "/assets/{file}",
      [this](const Request& request) {
        return serve(request, "assets/" + request.params.at("file"));
      },
      open);
}

Response StaticFiles::serve(const Request& request, const std::string& name) const {
  const auto found = files_.find(name);
  if (found == files_.end()) {
    return problem(ProblemType::kNotFound, "no such path: " + printable(request.path),
                   request.path);
  }
  Response response;
  response.status = 200;
  response.content_type = found->second.content_type;
  response.body = found->second.body;
  const bool hashed = name.starts_with("assets/");
  response.headers.emplace_back("Cache-Control",
                                hashed ? "public, max-age=31536000, immutable" : "no-cache");
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return response;
}

}  // namespace kfaild::api
