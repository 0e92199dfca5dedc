"""knobs: what batching in the probe's clients would save, and what it would cost.

kfaild keeps librdkafka's linger.ms 5 and fetch.min.bytes 1 (the broker answers a fetch as soon as
any probe partition has a new message), so acks and receives are timed as a default client sees
them; the variants trade that for fewer wake-ups of librdkafka's broker threads."""

import json
import subprocess
import time

from ..build import build_info, ensure_built
from ..common import fresh_db, load, sample_proc, say, sh, stop
from ..kfaild import (
    LATENCY_METRICS,
    KfaildApi,
    kfaild_config,
    latency_totals,
    probe_counters,
    probe_partitions,
    wait_http_port,
)
from ..lab import delete_topic, lab1_up
from ..results import save

KNOB_VARIANTS = (
    ("default", None),
    # kfaild's own client (probe.client wire): one request per broker per tick, no batching
    # setting at all.
    ("wire client", None),
    ("fetch held 10 ms", {"fetch.min.bytes": "1048576", "fetch.wait.max.ms": "10"}),
    ("fetch held 20 ms", {"fetch.min.bytes": "1048576", "fetch.wait.max.ms": "20"}),
    ("linger 20 ms", {"linger.ms": "20"}),
    (
        "linger 20 ms, fetch held 20 ms",
        {"linger.ms": "20", "fetch.min.bytes": "1048576", "fetch.wait.max.ms": "20"},
    ),
    # Not a timing trade but a safety one (retries could then duplicate or reorder what is
    # measured): here to show what idempotence itself costs, which probe.py does not pay.
    ("idempotence off", {"enable.idempotence": "false"}),
)


def knob_figures(n, a, b, la, lb, ca, cb, w):
    """What kfaild did in a window of w seconds on n partitions at 20 ms, from its sample_proc()
    (a, b), latency_totals() (la, lb) and probe_counters() (ca, cb) at the window's two ends."""
    acked = cb["acked"] - ca["acked"]
    out = {
        "window_s": round(w, 1),
        "cpu_cores": (b["cpu_s"] - a["cpu_s"]) / w,
        "librdkafka_cores": (b["librdkafka_cpu_s"] - a["librdkafka_cpu_s"]) / w,
        "own_cores": (b["own_cpu_s"] - a["own_cpu_s"]) / w,
        "librdkafka_wakeups_per_s": (b["librdkafka_wakeups"] - a["librdkafka_wakeups"]) / w,
        "own_wakeups_per_s": (b["own_wakeups"] - a["own_wakeups"]) / w,
        "acked": acked,
        "acked_fraction": acked / (n * w * 1000 / 20),
        "cpu_ms_per_1000_acked": (b["cpu_s"] - a["cpu_s"]) * 1e6 / acked if acked else None,
        "rss_kb": b["rss_kb"],
    }
    means = {}
    for key in LATENCY_METRICS:
        total, count = lb[key][0] - la[key][0], lb[key][1] - la[key][1]
        means[f"{key}_latency_mean_ms"] = 1000 * total / count if count else None
    return out, means


def knob_run(s, n, label, client, warmup, duration):
    topic = f"knobs-p{n}"
    db, cfg = s.work / f"knobs-{n}.db", s.work / f"knobs-{n}.yaml"
    log_path = s.work / f"knobs-{n}-kfaild.log"
    fresh_db(db)
    kfaild_config(s, cfg, db, topic, n, http_port=0, one_broker=True, client=client,
                  probe_client="wire" if label == "wire client" else None)  # fmt: skip
    cmd = [s.build / "server/kfaild", "--config", cfg]
    rec = {
        "partitions": n,
        "variant": label,
        "client": client or {},
        "command": sh(cmd),
        "load_before": load(),
    }
    say("$", sh(cmd), "#", label)
    log = open(log_path, "w")
    proc = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT)
    try:
        port = wait_http_port(proc, log_path, 120)
        api = KfaildApi(port)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 300:
            parts = probe_partitions(api.get(), topic)
            if len(parts) == n and all((p.get("acked") or 0) > 0 for p in parts.values()):
                break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"{topic}: not every partition acked within 300 s")
        time.sleep(warmup)
        a, la = sample_proc(proc.pid), latency_totals(port)
        ca = probe_counters(probe_partitions(api.get(), topic))
        ta = time.monotonic()
        time.sleep(duration)
        b, lb = sample_proc(proc.pid), latency_totals(port)
        cb = probe_counters(probe_partitions(api.get(), topic))
        w = time.monotonic() - ta
        figures, means = knob_figures(n, a, b, la, lb, ca, cb, w)
        rec.update({**figures, "load_after": load()})
        rec.update(means)
    except (RuntimeError, OSError) as e:
        rec["error"] = str(e)[-2000:]
        say("failed:", rec["error"])
    finally:
        stop(proc)
        log.close()
        fresh_db(db)
    return rec


def part_knobs(s, args):
    """kfaild alone on the one-broker lab, per size (>= 100) and variant, args.repeats rounds of
    every variant in turn."""
    ensure_built(s, "kfaild")
    lab1_up(s)
    s.work.mkdir(parents=True, exist_ok=True)
    warmup, duration = (10, 20) if args.quick else (10, 30)
    # Runs of the sizes not rerun now stay.
    old = s.results / "knobs.json"
    variants = [v for v in KNOB_VARIANTS if not args.knob_variants or v[0] in args.knob_variants]
    runs = [
        r
        for r in (json.loads(old.read_text())["runs"] if old.exists() else [])
        if r["partitions"] not in args.sizes or r["variant"] not in [v[0] for v in variants]
    ]
    for n in args.sizes:
        for rep in range(1, args.repeats + 1):
            for label, client in variants:
                if n < 100 and client:
                    continue  # a handful of partitions is too little to batch: nothing to compare
                runs.append(
                    {
                        **knob_run(s, n, label, client, warmup, duration),
                        "repeat": rep,
                        "invocation": s.invocation,
                    }
                )
                save(
                    s,
                    "knobs",
                    {
                        "build": build_info(s),
                        "load_source": "one-broker lab, RF 1",
                        "invocation": s.invocation,
                        "runs": runs,
                    },
                )
        if n >= 1000:
            delete_topic(s, f"knobs-p{n}", s.bootstrap1)
