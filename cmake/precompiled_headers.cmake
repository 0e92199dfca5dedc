# Precompiled headers (cmake/pch/): nlohmann/json, spdlog and Catch2 are parsed once per group of
# targets instead of once per source. A group shares one header (REUSE_FROM) only where its
# targets compile with the same flags and definitions, since GCC rejects a header precompiled
# with others (-Winvalid-pch, an error under -Werror). The first target of a group builds the
# header; it must be the one the others depend on, or the build has a cycle.
# -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON builds without them (to check a source includes what it
# uses). The header is named in angle brackets, found through the repository root on the include
# path: its path then stays out of the generated cmake_pch.hxx, and a compiler cache shares it
# between clones (scripts/build).
function(kfaild_precompile header owner)
  target_precompile_headers(${owner} PRIVATE "<${header}>")
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  endforeach()
endfunction()

# Logging, no librdkafka.
kfaild_precompile(cmake/pch/logging.h kfaild_common kfaild_storage kfaild_maintenance)
# Logging and librdkafka's include path (the daemon's version definitions are not used by the
# header, so GCC accepts it).
kfaild_precompile(cmake/pch/logging.h kfaild_kafka kfaild_probe kfaild_observe kfaild_drill
                  kfaild_daemon)
# Logging and Boost's definitions.
kfaild_precompile(cmake/pch/logging.h kfaild_notify kfaild_api)
# Neither logging nor Boost.
kfaild_precompile(cmake/pch/std_json.h kfaild_objectives kfaild_config kfaild_analysis
                  kfaild_drill_model)
kfaild_precompile(cmake/pch/std_json.h kfaild_fault)
kfaild_precompile(cmake/pch/tests.h kfaild_tests)
set_source_files_properties(main.cc DIRECTORY ${KFAILD_ROOT}/tests
                            PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
