#include "tests/support/test_certs.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace kfaild::testing {
namespace {

void openssl(const std::filesystem::path& dir, const std::string& args) {
  const std::string command = "cd '" + dir.string() + "' && openssl " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run openssl");
  std::string output;
  char chunk[512];
  while (std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe.get())) output.append(chunk, n);
  if (pclose(pipe.release()) != 0) throw std::runtime_error("openssl " + args + ": " + output);
}

void makeCa(const std::filesystem::path& dir, const std::string& name, const std::string& cn) {
  openssl(dir,
          "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -keyout " +
              name + ".key -out " + name + ".pem -subj '/CN=" + cn + "'");
}

void makeSigned(const std::filesystem::path& dir, const std::string& ca, const std::string& name,
                const std::string& cn, const std::string& extensions) {
  std::ofstream(dir / (name + ".ext")) << extensions << '\n';
  openssl(dir, "req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + name +
                   ".key -out " + name + ".csr -subj '/CN=" + cn + "'");
  openssl(dir, "x509 -req -days 2 -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
                   ".key -CAcreateserial -out " + name + ".pem -extfile " + name + ".ext");
}

}  // namespace

TestCertificates::TestCertificates(const std::filesystem::path& dir) : dir_(dir) {
  std::filesystem::create_directories(dir_);
  makeCa(dir_, "ca", "kfaild test CA");
  makeSigned(dir_, "ca", "server", "localhost",
             "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth");
  makeSigned(dir_, "ca", "client", "kfaild test client", "extendedKeyUsage=clientAuth");
  makeCa(dir_, "other-ca", "unrelated CA");
  makeSigned(dir_, "other-ca", "other-client", "unrelated client", "extendedKeyUsage=clientAuth");
}

}  // namespace kfaild::testing
