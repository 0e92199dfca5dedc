"""What the environment fixes when `lab` starts: the node ids (KFAILD_LAB_BROKERS,
KFAILD_LAB_CONTROLLERS), the lab's own files, the JVM options, and the Kafka settings the lab
keeps to itself (`--set` may not change them)."""

import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from .errors import UsageError

KAFKA_VERSION = "4.3.1"
CONTROLLER = 100  # the first (with one controller: the only) controller

# Every node id a lab may have, whatever KFAILD_LAB_CONTROLLERS and KFAILD_LAB_BROKERS say now:
# `down` and `reset` also stop a node outside the current counts that still runs.
ALL_CONTROLLERS = (100, 101, 102)
ALL_BROKERS = (1, 2, 3)


def broker_count(env: Mapping[str, str]) -> int:
    """KFAILD_LAB_BROKERS (1..3, default 3): how many brokers this lab has. The benchmarks' load
    source is a one-broker lab (bench/README.md): no replication, so the brokers are not what runs
    out first on a small machine. A lab keeps the count it was started with only as long as the
    variable stays the same: set it for every call, like KFAILD_LAB_PORT_BASE."""
    value = env.get("KFAILD_LAB_BROKERS", "3")
    if value not in ("1", "2", "3"):
        sys.exit(f"lab: KFAILD_LAB_BROKERS={value!r} is not 1, 2 or 3")
    return int(value)


def controller_count(env: Mapping[str, str]) -> int:
    """KFAILD_LAB_CONTROLLERS (1 or 3, default 1): how many dedicated controllers (KRaft voters)
    this lab has: node 100, or nodes 100, 101 and 102. Like KFAILD_LAB_BROKERS not remembered: a
    lab keeps the count it was started with only as long as the variable stays set for every
    call."""
    value = env.get("KFAILD_LAB_CONTROLLERS", "1")
    if value not in ("1", "3"):
        sys.exit(f"lab: KFAILD_LAB_CONTROLLERS={value!r} is not 1 or 3")
    return int(value)


def small_lab_settings(brokers: int) -> dict[str, str]:
    """With fewer than three brokers, the internal topics' replication factors (Kafka's
    defaults: 3) must fit the brokers there are, or consumer groups and transactions never
    work."""
    if brokers == 3:
        return {}
    return {
        "offsets.topic.replication.factor": str(brokers),
        "transaction.state.log.replication.factor": str(brokers),
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": str(brokers),
        "share.coordinator.state.topic.min.isr": "1",
    }


BROKERS: tuple[int, ...] = tuple(range(1, broker_count(os.environ) + 1))
CONTROLLERS: tuple[int, ...] = tuple(range(CONTROLLER, CONTROLLER + controller_count(os.environ)))
NODES: tuple[int, ...] = CONTROLLERS + BROKERS
SMALL_LAB_SETTINGS = small_lab_settings(len(BROKERS))

LAB_SRC = Path(__file__).resolve().parent.parent
REPO = LAB_SRC.parent
POM = LAB_SRC / "pom.xml"
LOG4J_CONFIG = LAB_SRC / "log4j2.yaml"
TOOLS_LOG4J_CONFIG = LAB_SRC / "tools-log4j2.yaml"
DEFAULT_PORT_BASE = 19000

# Container mode: the rootfs scripts/drill-env/podman-up builds from the host's /usr and /etc
# (no image registry is reachable here, and the host's java runs unchanged on it).
DEFAULT_PODMAN_ROOTFS = "/run/kfaild-podman/rootfs"

# What kafka-run-class.sh and kafka-server-start.sh give a broker, apart from the heap.
JVM_PERFORMANCE_OPTS = [
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
BROKER_HEAP = ["-Xms256m", "-Xmx512m"]
CONTROLLER_HEAP = ["-Xmx256m"]

# Keys the lab sets itself: the topology. Everything else may be overridden with --set.
OWN_KEYS = {
    "process.roles",
    "node.id",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "controller.listener.names",
    "inter.broker.listener.name",
    "log.dirs",
    "log.dir",
    "metadata.log.dir",
}


def is_controller(node: int) -> bool:
    return node in ALL_CONTROLLERS


def parse_settings(pairs: Iterable[str] | None) -> dict[str, str]:
    """`up --set KEY=VALUE` pairs as settings; a key the lab sets itself is a usage error."""
    settings: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", key):
            raise UsageError(
                f"--set {pair!r}: expected key=value, e.g. broker.session.timeout.ms=3000"
            )
        if "\n" in value or "\r" in value:
            raise UsageError(f"--set {key}: the value must be on one line")
        if key in OWN_KEYS:
            raise UsageError(f"--set {key}: the lab sets {key} itself (topology, ports, dirs)")
        settings[key] = value.strip()
    return settings
