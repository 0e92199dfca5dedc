"""idle: kfaild's cost per cluster when its probe does next to nothing."""

import subprocess
import time

from ..build import build_info, ensure_built
from ..common import fresh_db, load, sample_proc, say, sh, stop
from ..kfaild import KfaildApi, kfaild_config, probe_partitions, wait_http_port
from ..lab import lab1_up
from ..results import save


def part_idle(s, args):
    """kfaild has no probe pause (neither an API nor a drill guard stops the sends), so this is
    the probe at its lowest rate: one partition, interval_ms 60000 (the largest the configuration
    accepts)."""
    ensure_built(s, "kfaild")
    lab1_up(s)
    s.work.mkdir(parents=True, exist_ok=True)
    secs = 20 if args.quick else 60
    runs = [idle_run(s, secs, client) for client in args.probe_clients]
    save(s, "idle", {"build": build_info(s), "run": runs[0], "runs": runs})


def idle_figures(a, b, w):
    """CPU per second (ms), split into librdkafka's threads and the rest, between two
    sample_proc() moments w seconds apart."""
    return {
        "window_s": round(w, 1),
        "cpu_ms_per_s": (b["cpu_s"] - a["cpu_s"]) * 1000 / w,
        "librdkafka_cpu_ms_per_s": (b["librdkafka_cpu_s"] - a["librdkafka_cpu_s"]) * 1000 / w,
        "own_cpu_ms_per_s": (b["own_cpu_s"] - a["own_cpu_s"]) * 1000 / w,
        "threads": b["threads"],
        "librdkafka_clients": b["librdkafka_clients"],
        "rss_kb": b["rss_kb"],
    }


def idle_run(s, secs, probe_client):
    db, cfg = s.work / "idle.db", s.work / "idle.yaml"
    log_path = s.work / "idle-kfaild.log"
    fresh_db(db)
    kfaild_config(s, cfg, db, "idle-p1", 1, interval_ms=60000, http_port=0, one_broker=True,
                  probe_client=probe_client)  # fmt: skip
    cmd = [s.build / "server/kfaild", "--config", cfg]
    rec = {
        "command": sh(cmd),
        "interval_ms": 60000,
        "partitions": 1,
        "load_before": load(),
        "probe_client": probe_client,
    }
    say("$", sh(cmd))
    log = open(log_path, "w")
    proc = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT)
    try:
        api = KfaildApi(wait_http_port(proc, log_path, 60))
        t0 = time.monotonic()
        while not probe_partitions(api.get(), "idle-p1") and time.monotonic() - t0 < 120:
            time.sleep(0.5)
        time.sleep(10)
        a, ta = sample_proc(proc.pid), time.monotonic()
        time.sleep(secs)
        b, tb = sample_proc(proc.pid), time.monotonic()
        rec.update({**idle_figures(a, b, tb - ta), "load_after": load()})
    except (RuntimeError, OSError) as e:
        rec["error"] = str(e)[-2000:]
    finally:
        stop(proc)
        log.close()
        fresh_db(db)
    return rec
