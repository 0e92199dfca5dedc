"""A node's server.properties (written each time it starts) and kafka-storage format."""

import base64
import os
import subprocess
from collections.abc import Iterable

from .console import say
from .errors import LabError
from .layout import netns_mode, node_host, node_port, secured, security_mode
from .netns import data_dir, disk_up
from .secured import AUTHORIZER_PROPERTIES, private_write, scram_arguments, security_properties
from .settings import BROKERS, CONTROLLERS, SMALL_LAB_SETTINGS, TOOLS_LOG4J_CONFIG
from .state import libs_dir, logs_path, node_dir, props_path


def new_cluster_id() -> str:
    # A Kafka Uuid: 16 random bytes, URL-safe base64 without padding (as `kafka-storage
    # random-uuid`).
    while True:
        raw = os.urandom(16)
        cid = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        if not cid.startswith("-"):  # would read as an option on a command line
            return cid


def server_properties(node: int, base: int, settings: dict[str, str] | None) -> str:
    # A static quorum: every node knows every voter from its configuration, and
    # `kafka-storage format` needs no --standalone or --initial-controllers for it.
    voters = ",".join(f"{c}@{node_host(c, base)}:{node_port(c, base)}" for c in CONTROLLERS)
    port = node_port(node, base)
    host = node_host(node, base)
    lines = [
        "# Written by lab/lab each time the node starts: change settings with",
        "# `lab up --set key=value`, not here. Anything not below is Kafka's default.",
        f"node.id={node}",
        f"controller.quorum.voters={voters}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={data_dir(node)}",
    ]
    if node in CONTROLLERS:
        lines += [
            "process.roles=controller",
            f"listeners=CONTROLLER://{host}:{port}",
        ]
    elif secured():
        lines = [ln for ln in lines if not ln.startswith("listener.security.protocol.map=")]
        lines += [
            "process.roles=broker",
            f"# KFAILD_LAB_SECURITY={security_mode()}",
            *security_properties(node, base),
        ]
    else:
        lines += [
            "process.roles=broker",
            f"listeners=PLAINTEXT://{host}:{port}",
            f"advertised.listeners=PLAINTEXT://{host}:{port}",
            "inter.broker.listener.name=PLAINTEXT",
        ]
        if SMALL_LAB_SETTINGS:
            lines.append(f"# a lab of {len(BROKERS)} broker(s) (KFAILD_LAB_BROKERS)")
            lines += [
                f"{k}={v}"
                for k, v in sorted(SMALL_LAB_SETTINGS.items())
                if k not in (settings or {})
            ]
    if security_mode() == "sasl_ssl":
        lines += AUTHORIZER_PROPERTIES
    if settings:
        lines.append("# lab up --set")
        lines += [f"{k}={v}" for k, v in sorted(settings.items())]
    return "\n".join(lines) + "\n"


def write_config(node: int, base: int, settings: dict[str, str]) -> None:
    d = node_dir(node)
    d.mkdir(parents=True, exist_ok=True)
    if netns_mode():
        disk_up(node)
    data_dir(node).mkdir(parents=True, exist_ok=True)
    logs_path(node).mkdir(parents=True, exist_ok=True)
    # Secured mode puts passwords in it (the brokers' own, and PLAIN's users).
    private_write(props_path(node), server_properties(node, base, settings))


def formatted(node: int) -> bool:
    return (data_dir(node) / "meta.properties").exists()


def format_storage(nodes: Iterable[int], java: str, cluster_id: str) -> None:
    """kafka-storage format for every node in `nodes` that has not been formatted yet."""
    todo = [n for n in nodes if not formatted(n)]
    procs = []
    for n in todo:
        cmd = [
            java,
            f"-Dlog4j2.configurationFile={TOOLS_LOG4J_CONFIG}",
            "-Xmx256m",
            "-cp",
            f"{libs_dir()}/*",
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            cluster_id,
            "--config",
            str(props_path(n)),
            "--ignore-formatted",
            *(scram_arguments() if secured() else []),
        ]
        procs.append(
            (
                n,
                subprocess.Popen(
                    cmd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    text=True,
                ),
            )
        )
    failed: dict[str, list[int]] = {}
    for n, p in procs:
        out, _ = p.communicate()
        if p.returncode != 0 or not formatted(n):
            # The message, not the stack trace; the same message once for all nodes it hit.
            lines = [ln for ln in out.strip().splitlines() if not ln.startswith("\tat ")][:10]
            failed.setdefault(f"exit code {p.returncode}: " + "\n".join(lines), []).append(n)
    if failed:
        raise LabError(
            "kafka-storage format failed\n"
            + "\n".join(f"node(s) {', '.join(map(str, ns))}: {msg}" for msg, ns in failed.items())
        )
    if todo:
        say(f"formatted storage of node(s) {', '.join(map(str, todo))} (cluster id {cluster_id})")
