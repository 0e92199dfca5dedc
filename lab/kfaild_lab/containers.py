"""Container mode (`start N --container`, `up --containers`): a node's JVM as PID 1 of a Podman
container, so that Docker Engine API semantics apply to it."""

import os
import shutil
import subprocess
from pathlib import Path

from .console import now_iso, say
from .errors import LabError
from .jars import cds_options
from .processes import proc_is_node, write_pid
from .settings import (
    ALL_BROKERS,
    ALL_CONTROLLERS,
    BROKER_HEAP,
    CONTROLLER_HEAP,
    CONTROLLERS,
    DEFAULT_PODMAN_ROOTFS,
    DEFAULT_PORT_BASE,
    JVM_PERFORMANCE_OPTS,
    LAB_SRC,
    LOG4J_CONFIG,
    is_controller,
)
from .state import extra_jvm_opts, libs_dir, logs_path, node_dir, props_path, state_dir


def podman_rootfs() -> Path:
    return Path(os.environ.get("KFAILD_PODMAN_ROOTFS") or DEFAULT_PODMAN_ROOTFS)


def container_name(node: int, base: int) -> str:
    """kfaild-lab-k1 .. k3 and kfaild-lab-c100 (.. c102); a lab on another port base (a second
    lab on the same machine) gets kfaild-lab<base>-k1 so the two never share a container."""
    prefix = "kfaild-lab" if base == DEFAULT_PORT_BASE else f"kfaild-lab{base}"
    return f"{prefix}-c{node}" if is_controller(node) else f"{prefix}-k{node}"


def find_podman() -> str:
    podman = shutil.which("podman")
    if not podman:
        raise LabError(
            "podman not found: run scripts/drill-env/podman-up (as root) for the container mode"
        )
    rootfs = podman_rootfs()
    if not (rootfs / "usr" / "bin").is_dir():
        raise LabError(
            f"no container rootfs at {rootfs}: run scripts/drill-env/podman-up "
            f"(or set KFAILD_PODMAN_ROOTFS)"
        )
    return podman


def podman_run(
    podman: str, args: list[str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(
            [podman, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise LabError(f"podman {' '.join(args[:2])} did not finish within {timeout} s") from e
    return proc


class ContainerNode:
    """A node's JVM in a container, shaped like the Popen that launch() returns."""

    def __init__(self, podman: str, node: int, name: str, pid: int) -> None:
        self.podman, self.node, self.name, self.pid = podman, node, name, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and not proc_is_node(self.pid, self.node):
            out = podman_run(self.podman, ["inspect", "--format", "{{.State.ExitCode}}", self.name])
            code = out.stdout.strip()
            self.returncode = int(code) if code.lstrip("-").isdigit() else -1
        return self.returncode


def launch_container(node: int, java: str, base: int) -> ContainerNode:
    """Starts the node's JVM as PID 1 of a Podman container on the host's network, with the
    node's dir, the jars and lab bind-mounted at their own paths, so the JVM's command
    line, files and ports are the same as in process mode (and `lab` finds it the same way). The
    container is created anew each time; the engine's `start` reuses it as it is."""
    podman = find_podman()
    name = container_name(node, base)
    logs = logs_path(node)
    heap = CONTROLLER_HEAP if node in CONTROLLERS else BROKER_HEAP
    java_home = Path(os.path.realpath(java)).parent.parent
    mounts = [node_dir(node), libs_dir(), LAB_SRC]
    if not str(java_home).startswith("/usr/"):
        mounts.append(java_home)
    cmd = [
        "run",
        "--detach",
        "--replace",
        "--name",
        name,
        "--network",
        "host",
        "--tmpfs",
        "/tmp",
        "--workdir",
        str(node_dir(node)),
        "--label",
        f"kfaild.lab.node={node}",
        "--label",
        f"kfaild.lab.dir={state_dir()}",
    ]
    for m in mounts:
        ro = "" if m == node_dir(node) else ":ro"
        cmd += ["--volume", f"{m}:{m}{ro}"]
    cmd += [
        "--rootfs",
        str(podman_rootfs()),
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
    with open(logs / "kafka.out", "ab") as out:
        out.write(
            f"=== lab: starting node {node} in container {name} at {now_iso()} "
            f"(its stdout: `podman logs {name}`) ===\n".encode()
        )
    run = podman_run(podman, cmd, timeout=120)
    if run.returncode != 0:
        raise LabError(
            f"podman run {name} failed (exit {run.returncode}): "
            f"{(run.stderr or run.stdout).strip()}"
        )
    pid = podman_run(podman, ["inspect", "--format", "{{.State.Pid}}", name]).stdout.strip()
    if not pid.isdigit() or int(pid) == 0:
        raise LabError(
            f"container {name} exited right after it started: "
            f"`podman logs {name}` says\n"
            + podman_run(podman, ["logs", "--tail", "30", name]).stderr
        )
    write_pid(node, int(pid))
    return ContainerNode(podman, node, name, int(pid))


def remove_containers(base: int) -> None:
    """Removes this lab's stopped containers (`down`, `reset`); no-op without podman."""
    podman = shutil.which("podman")
    if not podman:
        return
    names = [container_name(n, base) for n in ALL_CONTROLLERS + ALL_BROKERS]
    listed = podman_run(podman, ["ps", "--all", "--format", "{{.Names}}"])
    mine = [n for n in listed.stdout.split() if n in names]
    if mine:
        podman_run(podman, ["rm", "--force", *mine])
        say(f"removed container(s) {', '.join(mine)}")
