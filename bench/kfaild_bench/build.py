"""The kfaild build a run measures: building what is missing, and recording what was built."""

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from .common import say, sh
from .settings import DEFAULT_BUILD

TARGET_PATHS = {
    "kfaild": "server/kfaild",
    "probe_bench": "bench/probe_bench",
    "store_bench": "bench/store_bench",
    "refprobe": "bench/refprobe",
}


def ensure_built(s, *targets):
    """Builds the targets the build lacks, so that run-all works from a fresh clone: scripts/setup
    (librdkafka 2.14.2 into the cache, idempotent), then cmake with the project's defaults
    (RelWithDebInfo) into the default build. Only a build dir of our own is built here: in someone
    else's (KFAILD_BENCH_BUILD pointing at a developer's build) a missing binary means a build in
    progress, and a second ninja in the same dir would race with it."""
    missing = [t for t in targets if not (s.build / TARGET_PATHS[t]).exists()]
    if not missing:
        return
    if s.build != DEFAULT_BUILD and (s.build / "CMakeCache.txt").exists():
        raise RuntimeError(
            f"no {', '.join(missing)} in {s.build} (a build in progress there?): "
            "retry when it is back"
        )
    rdkafka = s.jars.parent.parent / "librdkafka-2.14.2"
    cmds = []
    if not (rdkafka / "lib").exists():
        cmds.append([s.repo / "scripts/setup"])
    if not (s.build / "build.ninja").exists():
        cmds.append(
            [
                "cmake",
                "-S",
                s.repo,
                "-B",
                s.build,
                "-G",
                "Ninja",
                f"-DCMAKE_PREFIX_PATH={rdkafka}",
                f"-DCMAKE_BUILD_RPATH={rdkafka}/lib",
            ]
        )
    cmds.append(["cmake", "--build", s.build, "--target", *missing])
    for cmd in cmds:
        say("$", sh(cmd))
        subprocess.run([str(c) for c in cmd], check=True)


def built_commit(build):
    """The commit the benchmarked build was configured from (its CMake source dir's HEAD)."""
    cache = build / "CMakeCache.txt"
    if not cache.exists():
        return None
    m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache.read_text(), re.M)
    if not m:
        return None
    p = subprocess.run(
        ["git", "-C", m.group(1), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return p.stdout.strip() or None


def built_flags(build):
    """The optimisation and debug flags the benchmarked build compiles kfaild with, as its
    compile_commands.json has them (CMakeLists.txt exports it): what report.py names."""
    commands = build / "compile_commands.json"
    if not commands.exists():
        return None
    return main_cc_flags(json.loads(commands.read_text()))


def main_cc_flags(compile_commands):
    """server/main.cc's -O, -g, -DNDEBUG, -march and -flto flags from compile_commands.json's
    entries, space-separated; None when it is not there or has none."""
    for entry in compile_commands:
        if entry.get("file", "").endswith("server/main.cc"):
            args = entry.get("arguments") or shlex.split(entry.get("command", ""))
            wanted = r"-O\S*|-g\S*|-DNDEBUG|-march=\S+|-flto\S*"
            return " ".join(a for a in args if re.fullmatch(wanted, a)) or None
    return None


def machine(build):
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kfaild_commit": built_commit(build),
        "cxx_flags": built_flags(build),
    }


def build_info(s):
    """Which kfaild was measured: the commit checked out when the part ran and when it was made,
    the binary's own time (older than the commit: built from the tree before it was committed),
    and what differed from the commit in the source tree (a developer's build may include
    uncommitted changes)."""
    binary = s.build / "server/kfaild"
    changed = subprocess.run(
        [
            "git",
            "-C",
            str(s.repo),
            "status",
            "--porcelain",
            "--",
            "server",
            "api",
            "storage",
            "CMakeLists.txt",
        ],
        capture_output=True,
        text=True,
    ).stdout.splitlines()

    def utc(t):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

    committed = subprocess.run(
        ["git", "-C", str(s.repo), "log", "-1", "--format=%ct"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "dir": str(s.build),
        "commit": built_commit(s.build),
        "commit_time": utc(int(committed)) if committed else None,
        "binary_mtime": utc(binary.stat().st_mtime),
        "uncommitted_at_run": [line[3:] for line in changed],
    }
