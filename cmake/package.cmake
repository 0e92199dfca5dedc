# The Debian package (issue 28): `scripts/package` configures the build with -DKFAILD_PACKAGE=ON
# -DCMAKE_INSTALL_PREFIX=/usr and runs `cpack -G DEB`. Besides kfaild, kfailctl and the dashboard
# (installed by every `cmake --install`), the package carries the systemd unit (its ExecStart
# pointing at the installed binary), the sysusers and tmpfiles files, the example configuration
# as a conffile (0640 in a 0750 /etc/kfaild, given to the kfaild group by the postinst),
# and its own copy of librdkafka in /usr/lib/kfaild (Debian 12's is too old), found through the
# binary's RUNPATH. lintian's overrides, each explained, are in deploy/debian/lintian-overrides.
option(KFAILD_PACKAGE "Install what the Debian package carries (unit, sysusers, /etc config, librdkafka)" OFF)
if(NOT KFAILD_PACKAGE)
  return()
endif()

set(pkg ${CMAKE_BINARY_DIR}/package)
file(MAKE_DIRECTORY ${pkg})
set_target_properties(kfaild PROPERTIES INSTALL_RPATH "$ORIGIN/../lib/kfaild")

# librdkafka, stripped (lintian refuses unstripped objects), under its soname.
file(REAL_PATH ${RDKAFKA_LIBDIR}/librdkafka.so.1 rdkafka_real)
execute_process(COMMAND strip --strip-unneeded --remove-section=.comment --remove-section=.note
                        -o ${pkg}/librdkafka.so.1 ${rdkafka_real} COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${pkg}/librdkafka.so.1 DESTINATION lib/kfaild
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# The unit as deploy/systemd has it, with the packaged binary's path.
file(READ ${KFAILD_ROOT}/deploy/systemd/kfaild.service unit)
string(REPLACE "/usr/local/bin/kfaild" "${CMAKE_INSTALL_FULL_BINDIR}/kfaild" unit "${unit}")
file(WRITE ${pkg}/kfaild.service "${unit}")
install(FILES ${pkg}/kfaild.service DESTINATION /lib/systemd/system)
install(FILES ${KFAILD_ROOT}/deploy/systemd/kfaild.sysusers DESTINATION lib/sysusers.d RENAME kfaild.conf)
install(FILES ${KFAILD_ROOT}/deploy/systemd/kfaild.tmpfiles DESTINATION lib/tmpfiles.d RENAME kfaild.conf)
# The configuration may hold credentials: root's, 0750 and 0640, never readable by others. The
# postinst gives both to the kfaild group (tmpfiles.d), which does not exist before it runs.
install(DIRECTORY DESTINATION /etc/kfaild
        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
install(FILES ${KFAILD_ROOT}/deploy/systemd/kfaild.yaml DESTINATION /etc/kfaild
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)

# /usr/share/doc/kfaild: the copyright file and a changelog (gzip -9n: no name, no timestamp).
configure_file(${KFAILD_ROOT}/deploy/debian/changelog.in ${pkg}/changelog @ONLY)
execute_process(COMMAND gzip -9nf ${pkg}/changelog COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${KFAILD_ROOT}/deploy/debian/copyright ${pkg}/changelog.gz DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kfaild)
# The sudoers line for kfaild-gray (/usr/lib/kfaild), an example an operator installs on purpose.
install(FILES ${KFAILD_ROOT}/deploy/sudoers/kfaild-gray DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kfaild/examples
        RENAME kfaild-gray.sudoers)
install(FILES ${KFAILD_ROOT}/deploy/debian/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME kfaild)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kfaild)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "kfaild authors <kfaild@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Kafka broker failure drills and write/read stall measurement")
set(CPACK_PACKAGE_DESCRIPTION "kfaild probes a Kafka cluster without pause and runs broker failure
drills (kill, graceful stop, pause, network isolation, throttling, full
disks) through the Docker Engine API, SSH or local processes. It stores
every ack and receive gap in SQLite and serves per-partition stall
figures, verdicts and a dashboard over a REST API. kfailctl starts
drills and prints their results.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
# What kfaild and its librdkafka link against (ldd) as Debian 12 names them; systemd for the
# postinst's systemd-sysusers and systemd-tmpfiles (the prerm's deb-systemd-invoke is essential's init-system-helpers).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1, libssl3, libsasl2-2, libsqlite3-0, libyaml-cpp0.7, libspdlog1.10, libfmt9, zlib1g, libzstd1, liblz4-1, systemd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${KFAILD_ROOT}/deploy/debian/conffiles ${KFAILD_ROOT}/deploy/debian/postinst
    ${KFAILD_ROOT}/deploy/debian/prerm ${KFAILD_ROOT}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
include(CPack)
