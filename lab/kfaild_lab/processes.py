"""The nodes' JVMs as processes: pid files, /proc, the java to run, ports in use, a failed
start's log."""

import errno
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from .errors import LabError
from .layout import host_of_port
from .settings import KAFKA_VERSION
from .state import logs_path, pid_path, props_path


def read_pid(node: int) -> int | None:
    try:
        return int(pid_path(node).read_text().strip())
    except (OSError, ValueError):
        return None


def proc_is_node(pid: int, node: int) -> bool:
    """True if pid is a live (not zombie) JVM running this lab's node `node`."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        if stat[stat.rindex(")") + 2] in "ZX":
            return False
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except (OSError, ValueError):
        return False
    return b"kafka.Kafka" in args and str(props_path(node)).encode() in args


def proc_paused(pid: int) -> bool:
    """True if the process is stopped (SIGSTOP, e.g. a pause drill) or its cgroup is frozen
    (`docker pause` of a container node)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        if stat[stat.rindex(")") + 2] in "Tt":
            return True
        with open(f"/proc/{pid}/cgroup") as f:
            cgroups = f.read().splitlines()
    except (OSError, ValueError):
        return False
    for line in cgroups:
        _, controllers, path = line.split(":", 2)
        try:
            if "freezer" in controllers.split(","):
                state = Path(f"/sys/fs/cgroup/freezer{path}/freezer.state").read_text().strip()
                if state in ("FROZEN", "FREEZING"):
                    return True
            elif controllers == "":
                root = (
                    "/sys/fs/cgroup/unified"
                    if Path("/sys/fs/cgroup/unified").is_dir()
                    else "/sys/fs/cgroup"
                )
                if Path(f"{root}{path}/cgroup.freeze").read_text().strip() == "1":
                    return True
        except OSError:
            continue
    return False


def proc_in_container(pid: int) -> bool:
    """True if the process runs in one of Podman's containers (its cgroup is libpod's)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return "libpod" in f.read()
    except OSError:
        return False


def node_pid(node: int) -> int | None:
    """The pid of the running node, or None. Falls back to scanning /proc if the pid file is
    gone."""
    pid = read_pid(node)
    if pid and proc_is_node(pid, node):
        return pid
    if not props_path(node).exists():
        return None
    for entry in os.listdir("/proc"):
        if entry.isdigit() and proc_is_node(int(entry), node):
            write_pid(node, int(entry))
            return int(entry)
    return None


def write_pid(node: int, pid: int) -> None:
    tmp = pid_path(node).with_suffix(".pid.tmp")
    tmp.write_text(f"{pid}\n")
    os.replace(tmp, pid_path(node))


def remove_pid(node: int) -> None:
    try:
        pid_path(node).unlink()
    except FileNotFoundError:
        pass


def find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = None
    if home and (Path(home) / "bin" / "java").exists():
        java = str(Path(home) / "bin" / "java")
    else:
        java = shutil.which("java")
    if not java:
        raise LabError(
            "java not found: install a JDK 17+ (apt-get install default-jdk-headless) "
            "or set JAVA_HOME"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LabError(f"cannot run {java}: {e}") from e
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = int(m.group(1)) if m else 0
    if major == 1 and m and m.group(2):
        major = int(m.group(2))
    if major < 17:
        raise LabError(
            f"{java} is Java {major or '?'}; Kafka {KAFKA_VERSION} needs Java 17 or newer"
        )
    return java


def port_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError as e:
        if e.errno in (errno.EADDRINUSE, errno.EACCES):
            return False
        raise
    finally:
        s.close()


def port_owner(port: int) -> str:
    if not shutil.which("ss"):
        return ""
    try:
        out = subprocess.run(
            ["ss", "-H", "-ltnp", f"sport = :{port}"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r'users:\(\("([^"]+)",pid=(\d+)', out)
    return f" ({m.group(1)}, pid {m.group(2)})" if m else ""


def listening(port: int) -> bool:
    try:
        with socket.create_connection((host_of_port(port), port), timeout=0.5):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int = 40) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    return data[-lines:]


def failure_report(node: int, since: float) -> str:
    """The end of the node's own log, for a node that failed to start."""
    out = []
    for name in ("server.log", "kafka.out"):
        path = logs_path(node) / name
        try:
            fresh = path.stat().st_mtime >= since - 1
        except OSError:
            continue
        if fresh:
            out.append(f"--- last lines of {path}:")
            out.extend(tail(path))
            break
    return "\n".join(out)
