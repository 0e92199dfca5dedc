"""kfaild as the benchmarks run it: its configuration, the binary, its API and /metrics, and what
it stored (samples, gaps, events)."""

import importlib.util
import json
import re
import signal
import sqlite3
import subprocess
import time
import urllib.request
from http.client import HTTPException
from pathlib import Path

from .common import load, proc_cpu_rss, say, sh
from .stats import spacing

STATUS_RE = re.compile(r"cluster bench: .* probe probing")
ACKED_RE = re.compile(r" acked=(\d+)")
HTTP_RE = re.compile(r"http: listening on http://127\.0\.0\.1:(\d+)/")
PROBE_COUNTERS = ("sent", "acked", "send_failed", "held_ticks", "received", "lost")
LATENCY_METRICS = {
    "ack": "kfaild_probe_ack_latency_seconds",
    "end_to_end": "kfaild_probe_end_to_end_latency_seconds",
}


def kfaild_yaml(
    bootstrap,
    db,
    topic,
    partitions,
    interval_ms=20,
    assignment=None,
    log_level="info",
    http_port=None,
    one_broker=False,
    client=None,
    probe_client=None,
    probe_extra=None,
):
    """kfaild's YAML. http_port: an `http:` section on that port (0: an ephemeral one, logged as
    `http: listening on http://127.0.0.1:PORT/`); None leaves kfaild's default. one_broker: the
    one-broker lab (RF 1, min.insync.replicas 1) instead of the three-broker one. client: the
    cluster's `client:` librdkafka properties. probe_client: `probe.client` (librdkafka or wire;
    None leaves kfaild's default, librdkafka). probe_extra: more `probe:` keys, as given."""
    rf, min_isr = (1, 1) if one_broker else (3, 2)
    create = (
        f'replica_assignment: "{assignment}"'
        if assignment
        else f"partitions: {partitions}\n            replication_factor: {rf}"
    )
    http_section = "" if http_port is None else f"http:\n  port: {http_port}\n"
    client_section = "".join(f'\n      {k}: "{v}"' for k, v in (client or {}).items())
    client_section = f"\n    client:{client_section}" if client else ""
    probe_keys = (f"\n      client: {probe_client}" if probe_client else "") + "".join(
        f"\n      {k}: {v}" for k, v in (probe_extra or {}).items()
    )
    return f"""log_level: {log_level}
storage:
  path: {db}
{http_section}clusters:
  - name: bench
    bootstrap: {bootstrap}{client_section}
    probe:{probe_keys}
      interval_ms: {interval_ms}
      topics:
        - name: {topic}
          create:
            {create}
            configs:
              min.insync.replicas: "{min_isr}"
"""


def kfaild_config(s, path, db, topic, partitions, one_broker=False, bootstrap=None, **options):
    """Writes kfaild_yaml() for the bench lab (one_broker: the one-broker lab; bootstrap: another
    three-broker lab's) to path."""
    bootstrap = bootstrap or (s.bootstrap1 if one_broker else s.bootstrap)
    path.write_text(kfaild_yaml(bootstrap, db, topic, partitions, one_broker=one_broker, **options))


def gaps_module(s):
    """bench/peer-probe/gaps.py, the article method's stall rules, as a module."""
    spec = importlib.util.spec_from_file_location("gaps", s.bench / "peer-probe/gaps.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def jitter_from_db(db, since_us):
    """Send-time spacing per partition from kfaild's samples table: stddev of consecutive
    send_us differences (µs), pooled over partitions, and the worst deviation."""
    # Samples are stored in blocks (storage/sample_block.h); sample_blocks decodes them.
    from sample_blocks import samples

    # Not the commit and control probes' samples (`kfaild:commit`, `kfaild:control`), which keep
    # their own pace; probe_bench runs neither, kfaild does.
    return spacing(
        [
            (x["partition_id"], x["send_us"])
            for x in samples(db, since_us=since_us)
            if not x["topic"].startswith("kfaild:")
        ]
    )


def binary_window(points, first_probing, warmup):
    """What the kfaild binary did in its measurement window, from the /proc samples taken at its
    status lines ({t, cpu, rss_kb, acked}): the samples from one second before the warm-up's end
    on, first to last. None with fewer than two."""
    window = [x for x in points if x["t"] >= first_probing + warmup - 1]
    if len(window) < 2:
        return None
    a, b = window[0], window[-1]
    acked = b["acked"] - a["acked"]
    secs = b["t"] - a["t"]
    return {
        "window_s": secs,
        "acked": acked,
        "cpu_s": b["cpu"] - a["cpu"],
        "cpu_cores": (b["cpu"] - a["cpu"]) / secs,
        "cpu_ms_per_1000_acked": (b["cpu"] - a["cpu"]) * 1e6 / acked if acked else None,
        "rss_kb": b["rss_kb"],
    }


def dropped_samples(log_text):
    """The samples kfaild's last `stopped:` line says it dropped; None without one."""
    stopped = [line for line in log_text.splitlines() if "stopped:" in line]
    if not stopped:
        return None
    m = re.search(r"(\d+) samples dropped", stopped[-1])
    return int(m.group(1)) if m else None


def run_kfaild_binary(s, config, warmup, duration, log_path):
    """Runs the kfaild binary; samples /proc/<pid> when a status line (every 10 s) appears, so
    CPU and the acked counters in that line belong to the same moment."""
    cmd = [s.build / "server/kfaild", "--config", config]
    say("$", sh(cmd))
    before = load()
    log = open(log_path, "w")
    p = subprocess.Popen([str(c) for c in cmd], stderr=subprocess.PIPE, stdout=log, text=True)
    points = []
    first_probing = None
    t_end = None
    try:
        for line in p.stderr:
            log.write(line)
            if not STATUS_RE.search(line):
                continue
            cpu, rss = proc_cpu_rss(p.pid)
            acked = sum(int(x) for x in ACKED_RE.findall(line))
            t = time.monotonic()
            if first_probing is None:
                first_probing = t
                t_end = t + warmup + duration
            points.append({"t": t, "cpu": cpu, "rss_kb": rss, "acked": acked})
            if t >= t_end:
                break
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()
    figures = binary_window(points, first_probing, warmup)
    if figures is None:
        return {"command": sh(cmd), "error": "too few status lines", "load_before": before}
    return {
        "command": sh(cmd),
        "load_before": before,
        "load_after": load(),
        **figures,
        "dropped_samples": dropped_samples(Path(log_path).read_text()),
        "log": str(log_path),
    }


class KfaildApi:
    """GETs on a running kfaild's API (GET routes need no token); None when a request fails."""

    def __init__(self, port, cluster="bench"):
        self.base = f"http://127.0.0.1:{port}/api/v1/clusters/{cluster}"
        self.failures = 0
        self.last_error = None

    def get(self, suffix=""):
        try:
            with urllib.request.urlopen(self.base + suffix, timeout=2) as r:
                return json.loads(r.read())
        except (OSError, ValueError, HTTPException) as e:
            self.failures += 1
            self.last_error = str(e)
            return None


def probe_partitions(detail, topic):
    """partition -> the `probe` object of the cluster detail's partitions of the probe topic."""
    for t in (detail or {}).get("topics", []):
        if t["name"] == topic:
            return {p["partition"]: p["probe"] for p in t["partitions"] if p.get("probe")}
    return {}


def probe_counters(parts):
    """The probe's counters summed over the partitions (a missing or null counter counts 0)."""
    return {k: sum(p.get(k) or 0 for p in parts.values()) for k in PROBE_COUNTERS}


def wait_http_port(proc, log_path, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        m = HTTP_RE.search(log_path.read_text(errors="replace"))
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(
        f"kfaild logged no HTTP port (exit {proc.poll()}): "
        f"{log_path.read_text(errors='replace')[-1500:]}"
    )


def latency_totals_from_text(text):
    """(sum, count) per latency histogram over every partition, from /metrics' text."""
    out = {k: [0.0, 0.0] for k in LATENCY_METRICS}
    for line in text.splitlines():
        for key, name in LATENCY_METRICS.items():
            for i, suffix in enumerate(("_sum{", "_count{")):
                if line.startswith(name + suffix):
                    out[key][i] += float(line.rsplit(" ", 1)[1])
    return out


def latency_totals(port):
    """(sum, count) per latency histogram over every partition, from kfaild's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return latency_totals_from_text(r.read().decode())


def kfaild_stalls(db, fault_us, until_us):
    """Per (topic, partition, kind): the longest stored gap that ends after the fault and starts
    before until_us (the drill analysis's rule), from kfaild's gaps table."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT topic, partition, kind, start_us, end_us, duration_us FROM gaps "
        "WHERE end_us > ? AND start_us < ?",
        (fault_us, until_us),
    ).fetchall()
    con.close()
    return longest_stalls(rows)


def longest_stalls(rows):
    """ "topic[partition] kind" -> the longest of the (topic, partition, kind, start_us, end_us,
    duration_us) rows of that key; the first of equal ones."""
    best = {}
    for topic, p, kind, start, end, d in rows:
        key = f"{topic}[{p}] {kind}"
        if key not in best or d > best[key]["duration_us"]:
            best[key] = {"start_us": start, "end_us": end, "duration_us": d}
    return best


def kfaild_sending(s, db, topic, fault_us):
    """Per partition of `topic`, whether kfaild kept sending up to the fault (gaps.py's
    sending_at_fault, on kfaild's samples): the same test of the stall's start as probe.py's."""
    from sample_blocks import samples

    sending_at_fault = gaps_module(s).sending_at_fault
    sends = {}
    for x in samples(db, since_us=fault_us - 10_000_000, until_us=fault_us + 10_000_000):
        if x["topic"] == topic:
            sends.setdefault(x["partition"], []).append(
                (x["send_us"], x["ack_us"], x["ack_us"] is not None and x["ack_error"] == 0)
            )
    return {str(p): sending_at_fault(v, fault_us) for p, v in sorted(sends.items())}


def kfaild_phases(db, fault_us, until_us):
    """From kfaild's events: per partition, when (ms after the fault) the metadata poller saw a
    new leader and when the producer's and the consumer's librdkafka applied it."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT t_us, source, kind, partition, detail FROM events "
        "WHERE t_us > ? AND t_us < ? ORDER BY t_us",
        (fault_us, until_us),
    ).fetchall()
    con.close()
    return phases(rows, fault_us)


def phases(rows, fault_us):
    """kfaild_phases from the events' (t_us, source, kind, partition, detail) rows in time order:
    the first time of each."""
    out = {}
    for t, source, kind, partition, detail in rows:
        ms = (t - fault_us) / 1000
        if kind == "broker_gone" and "broker_gone_ms" not in out:
            out["broker_gone_ms"] = ms
        if partition is None:
            continue
        p = out.setdefault(str(partition), {})
        if source == "metadata" and kind == "leader_change":
            p.setdefault("metadata_new_leader_ms", ms)
        if source == "client" and kind == "client_leader_update":
            role = json.loads(detail).get("client", "?")
            p.setdefault(f"{role}_applied_ms", ms)
    return out
