"""The article-method peer: bench/peer-probe/probe.py, or its C++ port (`--peer-impl cxx`)."""

import json

from .build import ensure_built
from .common import now_us, run_json
from .stats import jitter_from_csv


def peer_cmd(s):
    if s.peer_impl == "cxx":
        ensure_built(s, "refprobe")
        return [s.build / "bench/refprobe"]
    return [s.py, s.bench / "peer-probe/probe.py"]


def peer_run(s, n, interval_ms, warmup, duration, csv=True, topic=None, one_broker=False):
    topic = topic or f"peer-p{n}"
    csv_path = s.work / f"peer-{n}-{interval_ms}ms.csv"
    cmd = (
        [*peer_cmd(s), "--bootstrap", s.bootstrap1 if one_broker else s.bootstrap,
         "--topic", topic, "--create-partitions", n, "--interval-ms", interval_ms,
         "--warmup", warmup, "--duration", duration]
        + (["--csv", csv_path] if csv else [])
        + (["--replication-factor", 1, "--min-insync", 1] if one_broker else [])
    )  # fmt: skip
    started = now_us()
    res, _, rec = run_json(cmd, timeout=600)
    entry = {**(res or {}), **rec}
    if csv and res:
        entry["jitter"] = jitter_from_csv(csv_path, started + (warmup + 5) * 1_000_000)
        csv_path.unlink(missing_ok=True)
    return entry


def status_lines(timer):
    """The peer's `{"kind": "status", ...}` JSON lines so far, in order."""
    out = []
    for _, line in list(timer.lines):
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if obj.get("kind") == "status":
                out.append(obj)
    return out


def nearest_status(timer, t_us):
    lines = status_lines(timer)
    return min(lines, key=lambda x: abs(x["t_us"] - t_us)) if lines else None
