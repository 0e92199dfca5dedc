// Precompiled for kfaild_tests (cmake/precompiled_headers.cmake): what most test sources include
// and took longest to parse (in CPU-s per source: nlohmann/json 1.5, Catch2 0.9, spdlog 0.8).
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>
