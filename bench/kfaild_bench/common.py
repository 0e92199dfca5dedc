"""Running commands and reading /proc: the pieces every part uses."""

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


def say(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def load():
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def now_us():
    return time.time_ns() // 1000


def sh(cmd):
    return " ".join(shlex.quote(str(c)) for c in cmd)


def run_json(cmd, timeout, env=None):
    """Runs a bench program that prints JSON lines; returns (last object, all objects, record)."""
    say("$", sh(cmd))
    before = load()
    t0 = time.monotonic()
    p = subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    rec = {
        "command": sh(cmd),
        "load_before": before,
        "load_after": load(),
        "wall_s": round(time.monotonic() - t0, 1),
        "exit": p.returncode,
    }
    if p.returncode != 0 or not lines:
        rec["stderr_tail"] = p.stderr[-2000:]
        say("failed:", p.returncode, p.stderr[-800:])
    return (lines[-1] if lines else None), lines, rec


def stop(p, sig=signal.SIGTERM, timeout=30):
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def fresh_db(db):
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def port_taken(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class LineTimer:
    """Reads a process's stdout on a thread and keeps each line with its arrival (wall µs)."""

    def __init__(self, proc, copy_path=None):
        self.lines = []
        self.copy = open(copy_path, "w") if copy_path else None
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc):
        for line in proc.stdout:
            self.lines.append((now_us(), line.rstrip("\n")))
            if self.copy:
                self.copy.write(f"{self.lines[-1][0]}\t{self.lines[-1][1]}\n")
                self.copy.flush()


def proc_cpu_rss(pid):
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return cpu, rss


def thread_groups(pid):
    """CPU seconds of a process's threads: librdkafka's (named rdk:*) and the rest, and how many
    librdkafka clients it runs (one rdk:main thread each)."""
    out = {
        "librdkafka_cpu_s": 0.0,
        "own_cpu_s": 0.0,
        "threads": 0,
        "librdkafka_clients": 0,
        "librdkafka_wakeups": 0,
        "own_wakeups": 0,
    }
    tck = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            status = (task / "status").read_text()
        except OSError:
            continue
        add_thread(out, stat, status, tck)
    return out


def add_thread(out, stat, status, tck):
    """Adds one thread's /proc stat and status to thread_groups' totals."""
    name = stat[stat.find("(") + 1 : stat.rfind(")")]
    fields = stat[stat.rfind(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / tck
    group = "librdkafka" if name.startswith("rdk:") else "own"
    out["threads"] += 1
    out[f"{group}_cpu_s"] += cpu
    # A voluntary context switch is a thread going to sleep (poll, a condition, a contended
    # lock): each is one wake-up later.
    m = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.M)
    out[f"{group}_wakeups"] += int(m.group(1)) if m else 0
    out["librdkafka_clients"] += name == "rdk:main"


def sample_proc(pid):
    cpu, rss = proc_cpu_rss(pid)
    return {"cpu_s": cpu, "rss_kb": rss, **thread_groups(pid)}
