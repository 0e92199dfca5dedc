// Precompiled for kfaild_tests (cmake/precompiled_headers.cmake): Catch2's single header, which
// every test source includes, with logging.h and the standard headers the tests use most.
// tests/main.cc is left out: it defines CATCH_CONFIG_RUNNER before it includes Catch2.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cmake/pch/logging.h"
