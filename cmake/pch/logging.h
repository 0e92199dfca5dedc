// Precompiled for the library targets that log (cmake/precompiled_headers.cmake): std_json.h and
// spdlog, only where spdlog's target gives its definitions (SPDLOG_COMPILED_LIB: the header
// without its implementation).
#pragma once

#include <spdlog/spdlog.h>

#include "cmake/pch/std_json.h"
