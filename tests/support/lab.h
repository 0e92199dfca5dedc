#pragma once

// Access to the lab cluster (deploy/lab/lab) for end-to-end tests. The ctest fixture `lab_up`
// starts it before the first e2e test; these helpers act on it.

#include <string>

namespace kfaild::testing {

// Runs `deploy/lab/lab <args>` and returns its exit code; output goes to the test log.
int lab(const std::string& args);
// Runs it and returns what it printed on stdout.
std::string labOutput(const std::string& args);
// "127.0.0.1:19091,127.0.0.1:19092,127.0.0.1:19093"
std::string labBootstrap();

}  // namespace kfaild::testing
