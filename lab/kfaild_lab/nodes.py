"""Starting nodes (as processes or in containers) and stopping them."""

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence

from .config import format_storage, write_config
from .console import now_iso, say, warn
from .containers import container_name, launch_container, podman_run
from .errors import LabError, UsageError
from .jars import cds_options
from .layout import netns_mode, netns_name, node_host, node_port, port_base, secured
from .netns import net_up
from .processes import (
    failure_report,
    listening,
    node_pid,
    port_free,
    port_owner,
    proc_in_container,
    proc_is_node,
    proc_paused,
    remove_pid,
    write_pid,
)
from .secured import ensure_security
from .settings import (
    BROKER_HEAP,
    CONTROLLER,
    CONTROLLER_HEAP,
    CONTROLLERS,
    JVM_PERFORMANCE_OPTS,
    LOG4J_CONFIG,
)
from .state import extra_jvm_opts, libs_dir, load_lab, logs_path, node_dir, props_path


def launch(node: int, java: str) -> subprocess.Popen[bytes]:
    """Starts the node's JVM detached (own session, survives this script). Returns the Popen."""
    logs = logs_path(node)
    heap = CONTROLLER_HEAP if node in CONTROLLERS else BROKER_HEAP
    cmd = [
        java,
        *heap,
        *JVM_PERFORMANCE_OPTS,
        *cds_options(java),
        *extra_jvm_opts(),
        f"-Xlog:gc*:file={logs / 'kafkaServer-gc.log'}:time,tags:filecount=10,filesize=100M",
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
        f"-Dkafka.logs.dir={logs}",
        "-cp",
        f"{libs_dir()}/*",
        "kafka.Kafka",
        str(props_path(node)),
    ]
    if netns_mode():
        # `ip netns exec` execs the JVM itself, so the pid is the JVM's as in the default mode.
        cmd = ["ip", "netns", "exec", netns_name(node, port_base()), *cmd]
    with open(logs / "kafka.out", "ab") as out:
        out.write(f"=== lab: starting node {node} at {now_iso()} ===\n".encode())
        out.flush()
        proc = subprocess.Popen(
            cmd,
            cwd=node_dir(node),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    write_pid(node, proc.pid)
    return proc


def start_nodes(
    nodes: Sequence[int],
    base: int,
    settings: dict[str, str],
    java: str,
    timeout: float,
    wait_listen: bool = True,
    container: bool = False,
) -> None:
    """Starts the given nodes (none of them running) and waits until each listens on its port.

    A broker opens its port only once it has caught up with the controller's metadata, so
    without a controller there is nothing to wait for (wait_listen=False)."""
    lab = load_lab()
    if netns_mode(lab):
        if container:
            raise UsageError("KFAILD_LAB_NETNS=1 and container mode do not go together")
        net_up(base, nodes)
    for n in nodes if not netns_mode(lab) else ():
        port = node_port(n, base)
        if not port_free(port):
            raise LabError(
                f"port {port} of node {n} is in use by another process"
                f"{port_owner(port)}, not by this lab's node {n}; stop it or choose "
                f"other ports with KFAILD_LAB_PORT_BASE"
            )
    if secured(lab):
        ensure_security(base)
    for n in nodes:
        write_config(n, base, settings)
    format_storage(nodes, java, lab["cluster_id"])
    started = {}
    t0 = time.monotonic()
    since = time.time()
    # The controllers first, so brokers find them on their first try.
    for n in sorted(nodes, key=lambda n: n not in CONTROLLERS):
        started[n] = launch_container(n, java, base) if container else launch(n, java)
    pending = set(nodes) if wait_listen else set()
    reaches = (
        f"controller {CONTROLLER}" if len(CONTROLLERS) == 1 else "a leader of the controller quorum"
    )
    for n in nodes if not wait_listen else ():
        say(
            f"node {n} started (pid {started[n].pid}); it will listen on "
            f"{node_host(n, base)}:{node_port(n, base)} once it reaches {reaches}"
        )
    deadline = t0 + timeout
    while pending:
        for n in sorted(pending):
            proc = started[n]
            if proc.poll() is not None:
                remove_pid(n)
                raise LabError(
                    f"node {n} exited with code {proc.returncode} while starting\n"
                    + failure_report(n, since)
                )
            if listening(node_port(n, base)):
                pending.discard(n)
                say(
                    f"node {n} started (pid {proc.pid}), listening on "
                    f"{node_host(n, base)}:{node_port(n, base)} "
                    f"after {time.monotonic() - t0:.1f} s"
                )
        if pending and time.monotonic() > deadline:
            raise LabError(
                f"node(s) {', '.join(map(str, sorted(pending)))} did not listen within "
                f"{timeout:g} s (still running; see `lab logs N`)"
            )
        if pending:
            time.sleep(0.1)


def stop_nodes(nodes: Iterable[int], timeout: float) -> bool:
    """SIGTERM, wait up to `timeout` s, then SIGKILL (like `docker stop`). Returns True if all
    stopped gracefully."""
    pids = {}
    for n in nodes:
        pid = node_pid(n)
        if pid is None:
            say(f"node {n} is not running")
            remove_pid(n)
            continue
        pids[n] = pid
    if not pids:
        return True
    t0 = time.monotonic()
    for n, pid in pids.items():
        podman = shutil.which("podman")
        if proc_in_container(pid) and proc_paused(pid) and podman:
            # A frozen cgroup holds even SIGKILL until it is thawed (`docker pause`).
            podman_run(podman, ["unpause", container_name(n, port_base())])
        sent = now_iso()
        try:
            os.kill(pid, signal.SIGTERM)
            # A paused node (SIGSTOP) would sit on the SIGTERM until the grace period ends.
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        say(f"node {n} (pid {pid}): SIGTERM sent at {sent}")
    graceful = True
    remaining = dict(pids)
    killed: set[int] = set()
    deadline = t0 + timeout
    while remaining:
        for n, pid in list(remaining.items()):
            if not proc_is_node(pid, n):
                del remaining[n]
                remove_pid(n)
                how = "SIGKILL after the grace period" if n in killed else "exited"
                say(f"node {n} (pid {pid}) {how} in {time.monotonic() - t0:.2f} s")
        if not remaining:
            break
        if time.monotonic() > deadline and not killed:
            for n, pid in remaining.items():
                warn(f"node {n} (pid {pid}) did not exit within {timeout:g} s; sending SIGKILL")
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                killed.add(n)
            graceful = False
            deadline = time.monotonic() + 10
        elif time.monotonic() > deadline and killed:
            raise LabError(f"node(s) {', '.join(map(str, remaining))} still alive after SIGKILL")
        time.sleep(0.05)
    return graceful
