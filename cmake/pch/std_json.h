// Precompiled for the library targets (cmake/precompiled_headers.cmake): the standard headers
// most sources include, and nlohmann/json, which 29 headers and 38 sources include and which
// took 1.5 CPU-s to parse in each of them.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
