# A precompiled header for kfaild_tests (cmake/pch/tests.h): Catch2's single header, nlohmann/json
# and spdlog are parsed once instead of once in each of its 140 sources. tests/main.cc is left out,
# since it defines CATCH_CONFIG_RUNNER before it includes Catch2.
# The libraries have none: their sources spend their time in code generation at -O2 (a
# precompiled header saved 8 % of their CPU time), and GCC 12 reports its false -Warray-bounds in
# std::string (an error under -Werror) where a source uses a precompiled header.
# -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON builds without it (to check a test includes what it uses).
# The header is named in angle brackets and found through the repository root on the include path,
# so that its path stays out of the generated cmake_pch.hxx and a compiler cache shares the
# precompiled header between clones (scripts/build).
target_precompile_headers(kfaild_tests PRIVATE "<cmake/pch/tests.h>")
# GCC 12 loses the system-header mark of std::string's code when it comes from a precompiled
# header, and reports its false -Warray-bounds there (an error under -Werror): the sources where
# it does compile without the header.
set(kfaild_tests_without_pch main.cc api/contract_schema_test.cc tools/kfailctl_tls_test.cc)
list(TRANSFORM kfaild_tests_without_pch PREPEND ${KFAILD_ROOT}/tests/)
set_source_files_properties(${kfaild_tests_without_pch} DIRECTORY ${KFAILD_ROOT}/tests
                            PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
