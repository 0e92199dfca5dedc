"""poll: metadata poll latency on a probe producer's own handle vs a client of its own."""

import json
import signal
import subprocess
import time

from ..common import LineTimer, load, now_us, say, sh, stop
from ..lab import create_topic, ensure_venv, kill_time_us, lab, lab_up, preferred_election
from ..results import save
from ..stats import median


def poll_summary(polls, fault_us):
    """One client's polls ({t_us, latency_ms, error}) around a fault: latency before it, and of
    the polls sent within 20 s after it; the longest time without an answer that spans that
    window (from the previous answer to the next one; failed polls, timeouts, included)."""
    before = [p["latency_ms"] for p in polls if p["t_us"] < fault_us]
    window = [p for p in polls if fault_us <= p["t_us"] - p["latency_ms"] * 1000 <= fault_us + 20e6]
    after = [p["latency_ms"] for p in window]
    answered = [p["t_us"] for p in polls if not p["error"]]
    blind = [
        b - a
        for a, b in zip(answered, answered[1:], strict=False)
        if b >= fault_us and a <= fault_us + 20e6
    ]
    return {
        "before_fault_max_ms": max(before or [0]),
        "before_fault_median_ms": median(before),
        "after_fault_max_ms": max(after or [0]),
        "after_fault_median_ms": median(after),
        "polls_after_fault": len(after),
        "failed_after_fault": sum(1 for p in window if p["error"]),
        "longest_without_answer_ms": max(blind or [0]) / 1000,
    }


def part_poll(s, args):
    """Metadata poll latency on the probe producer's own handle vs a client of its own, while a
    follower of every partition is killed (bench/poll-latency/poll_latency.py). The three-broker
    lab: broker 1 follows both partitions (assignment 2:1:3,3:1:2, min.insync.replicas 2), so the
    leaders' acks=all produce requests wait until it is fenced."""
    lab_up(s)
    ensure_venv(s)
    topic = "poll-latency"
    create_topic(s, topic, "2:1:3,3:1:2")
    preferred_election(s)
    cmd = [s.py, s.bench / "poll-latency/poll_latency.py", "--bootstrap", s.bootstrap,
           "--topic", topic, "--partitions", 2]  # fmt: skip
    say("$", sh(cmd))
    rec = {"command": sh(cmd), "assignment": "2:1:3,3:1:2", "load_before": load()}
    proc = subprocess.Popen(
        [str(c) for c in cmd],
        stdout=subprocess.PIPE,
        text=True,
        stderr=open(s.work / "poll-latency.err", "w"),
    )
    timer = LineTimer(proc)
    try:
        time.sleep(10)
        rec["load_at_kill"] = load()
        kill = lab(s, "kill", "1")
        rec["fault_us"] = kill_time_us(kill.stdout, now_us())
        time.sleep(25)
    finally:
        stop(proc, signal.SIGINT)
        lab(s, "start", "1", "--wait", "--timeout", "400", check=False)
    polls = []
    for _, line in timer.lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if obj.get("kind") == "summary":
            rec["summary"] = obj
        elif "client" in obj:
            polls.append(obj)
    for client in ("shared", "own"):
        rec[client] = poll_summary([p for p in polls if p["client"] == client], rec["fault_us"])
    save(s, "poll", rec)
