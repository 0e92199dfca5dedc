"""secured: the wire probe client beside the librdkafka one on the secured lab (SASL_SSL with
SCRAM-SHA-512 and the lab's CA, lab/README.md), one kfaild each, started together, each on a topic
of its own with N partitions (RF 3, min.insync.replicas 2), 20 ms, acks=all; one window measured
for both at the same moments: CPU and RSS per process from /proc, acked from each one's API."""

import json
import signal
import subprocess
import time

from ..build import ensure_built
from ..common import fresh_db, load, now_us, sample_proc, say, sh, stop
from ..kfaild import KfaildApi, kfaild_config, probe_counters, probe_partitions, wait_http_port
from ..lab import lab, lab_pids
from ..results import merge_runs, previous, save
from .side import cpu_part

CLIENTS = ("wire", "librdkafka")


def secured_lab_up(s):
    say("lab up (", s.secured_env, ")")
    lab(s, "up", "--timeout", "240", env=s.secured_env)


def secured_client(s):
    """The secured lab's client properties (`lab client`): kfaild's `client:` keys, the password
    as sasl.password_file."""
    return json.loads(lab(s, "client", env=s.secured_env).stdout)


def secured_run(s, n, rep, warmup, duration, client):
    """Both kfailds started together; the window once both ack on every partition."""
    procs, logs, apis, topics = {}, {}, {}, {}
    rec = {"partitions": n, "repeat": rep, "load_before": load(), "commands": {}}
    try:
        for c in CLIENTS:
            topics[c] = f"secured-{c}-p{n}-{rep}"
            db, cfg = s.work / f"secured-{c}-{n}.db", s.work / f"secured-{c}-{n}.yaml"
            logs[c] = s.work / f"secured-{c}-{n}-{rep}.log"
            fresh_db(db)
            kfaild_config(s, cfg, db, topics[c], n, http_port=0, client=client,
                          probe_client=c, bootstrap=s.secured_bootstrap)  # fmt: skip
            cmd = [s.build / "server/kfaild", "--config", cfg]
            rec["commands"][c] = sh(cmd)
            say("$", sh(cmd))
            procs[c] = subprocess.Popen(
                [str(x) for x in cmd], stdout=open(logs[c], "w"), stderr=subprocess.STDOUT
            )
        for c in CLIENTS:
            apis[c] = KfaildApi(wait_http_port(procs[c], logs[c], 120))
        t0 = time.monotonic()
        while True:
            parts = {c: probe_partitions(apis[c].get(), topics[c]) for c in CLIENTS}
            if all(
                len(p) == n and all((x.get("acked") or 0) > 0 for x in p.values())
                for p in parts.values()
            ):
                break
            for c, p in procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"kfaild ({c}) exited ({p.returncode}) before probing")
            if time.monotonic() - t0 > 300:
                raise RuntimeError("the two kfailds not both probing within 300 s")
            time.sleep(0.5)
        rec["setup_s"] = round(time.monotonic() - t0, 1)
        time.sleep(warmup)
        lab_pid_list = lab_pids(s, s.secured_env)

        def moment():
            m = {"t_us": now_us(), "load": load()}
            for c in CLIENTS:
                m[c] = {
                    **sample_proc(procs[c].pid),
                    **probe_counters(probe_partitions(apis[c].get(), topics[c])),
                }
            m["lab_cpu_s"] = sum(sample_proc(pid)["cpu_s"] for pid in lab_pid_list)
            return m

        a = moment()
        time.sleep(duration)
        b = moment()
        secs = (b["t_us"] - a["t_us"]) / 1e6
        expected = n * secs * 1000 / 20
        rec.update(
            {
                "window_s": round(secs, 2),
                "expected_per_probe": expected,
                "load_at_window_start": a["load"],
                "load_at_window_end": b["load"],
                "lab_cpu_cores": (b["lab_cpu_s"] - a["lab_cpu_s"]) / secs,
            }
        )
        for c in CLIENTS:
            k = cpu_part(a[c], b[c], secs)
            for key in ("acked", "sent", "send_failed", "held_ticks", "lost"):
                k[key] = b[c][key] - a[c][key]
            k["acked_fraction"] = k["acked"] / expected
            k["cpu_ms_per_1000_acked"] = k["cpu_s"] * 1e6 / k["acked"] if k["acked"] else None
            rec[c] = k
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        rec["error"] = str(e)[-2000:]
        say("failed:", rec["error"])
    finally:
        for p in procs.values():
            stop(p, signal.SIGTERM)
    return rec


def summary(runs):
    """One line per run: CPU per 1,000 acked of each client and their ratio."""
    lines = []
    for r in runs:
        if "error" in r:
            lines.append(f"{r['partitions']} partitions, run {r['repeat']}: {r['error']}")
            continue
        w, rd = r["wire"], r["librdkafka"]
        ratio = (
            rd["cpu_ms_per_1000_acked"] / w["cpu_ms_per_1000_acked"]
            if w["cpu_ms_per_1000_acked"] and rd["cpu_ms_per_1000_acked"]
            else None
        )
        lines.append(
            f"{r['partitions']} partitions, run {r['repeat']}: "
            f"wire {w['cpu_ms_per_1000_acked']:.1f} ms/1000 acked ({w['cpu_cores']:.3f} cores, "
            f"acked {w['acked_fraction']:.3f}, {w['rss_kb'] // 1024} MiB), "
            f"librdkafka {rd['cpu_ms_per_1000_acked']:.1f} ({rd['cpu_cores']:.3f} cores, "
            f"acked {rd['acked_fraction']:.3f}, {rd['rss_kb'] // 1024} MiB), "
            f"librdkafka / wire {ratio:.2f}x"
        )
    return lines


def part_secured(s, args):
    ensure_built(s, "kfaild")
    secured_lab_up(s)
    client = secured_client(s)
    sizes = args.sizes
    duration = args.secured_window_s
    runs = []
    for n in sizes:
        for rep in range(1, args.repeats + 1):
            say(f"secured: {n} partitions, run {rep}")
            runs.append(secured_run(s, n, rep, warmup=10, duration=duration, client=client))
    for r in runs:
        r["key"] = f"{r['partitions']:05d}-{r['repeat']}"
    old = previous(s, "secured", "key")
    merged = merge_runs(old, runs, "key")
    save(s, "secured", {"invocation": s.invocation, "runs": merged})
    for line in summary(merged):
        say(line)
