"""probe, peer and resolution: the cost of kfaild's probe and of the article's method alone on
the one-broker lab, and the smallest interval each sustains."""

import subprocess

from ..build import ensure_built
from ..common import fresh_db, now_us, run_json
from ..kfaild import jitter_from_db, kfaild_config, run_kfaild_binary
from ..lab import delete_topic, ensure_venv, lab1_up
from ..peer import peer_run
from ..results import merge_runs, previous, save


def part_probe(s, args):
    ensure_built(s, "kfaild", "probe_bench")
    lab1_up(s)
    s.work.mkdir(parents=True, exist_ok=True)
    pb = s.build / "bench/probe_bench"
    out = {"runs": []}
    kept = previous(s, "probe", "partitions")
    warmup, duration = (10, 20) if args.quick else (20, 60)
    for n in args.sizes:
        topic = f"bench-p{n}"
        cfg = s.work / f"probe-{n}.yaml"
        db = s.work / f"probe-{n}.db"
        fresh_db(db)
        kfaild_config(s, cfg, db, topic, n, one_broker=True)
        started = now_us()
        res, _, rec = run_json(
            [pb, "--config", cfg, "--warmup", warmup, "--duration", duration], timeout=600
        )
        entry = {"partitions": n, "probe_bench": {**(res or {}), **rec}}
        entry["probe_bench"]["jitter"] = jitter_from_db(db, started + (warmup + 5) * 1_000_000)
        # The binary, as deployed: same config, a fresh database.
        fresh_db(db)
        entry["binary"] = run_kfaild_binary(
            s, cfg, warmup, max(40, duration // 3 * 2), s.work / f"kfaild-{n}.log"
        )
        if n >= 1000:
            delete_topic(s, topic, s.bootstrap1)
        out["runs"].append(entry)
        save(
            s,
            "probe",
            {
                "load_source": "one-broker lab, RF 1",
                "runs": merge_runs(kept, out["runs"], "partitions"),
            },
        )


def part_peer(s, args):
    """probe.py alone on the one-broker lab, the load source of the probe part (kfaild alone), so
    that the two parts compare like with like."""
    lab1_up(s)
    ensure_venv(s)
    s.work.mkdir(parents=True, exist_ok=True)
    version = subprocess.run(
        [str(s.py), "-c", "import confluent_kafka as c; "
         "print(f'{c.__version__} (bundled librdkafka {c.libversion()[0]})')"],
        capture_output=True,
        text=True,
    ).stdout.strip()  # fmt: skip
    out = {"runs": [], "confluent_kafka": version}
    warmup, duration = (10, 20) if args.quick else (20, 60)
    kept = previous(s, "peer", "partitions")
    runs = []
    for n in args.sizes:
        runs.append(
            {
                "partitions": n,
                "peer": peer_run(s, n, 20, warmup, duration, topic=f"peer1-p{n}", one_broker=True),
            }
        )
        if n >= 1000:
            delete_topic(s, f"peer1-p{n}", s.bootstrap1)
        save(
            s,
            "peer",
            {**out, "load_source": "one-broker lab, RF 1",
             "runs": merge_runs(kept, runs, "partitions")},
        )  # fmt: skip


def sustained(r, interval_us):
    """The brief's criterion: the sender never fell behind (no send late by more than one
    interval, i.e. no skipped tick). Whether the cluster acked them all is reported beside."""
    return bool(r) and r.get("skipped_ticks") == 0


def part_resolution(s, args):
    ensure_built(s, "probe_bench")
    lab1_up(s)
    ensure_venv(s)
    s.work.mkdir(parents=True, exist_ok=True)
    pb = s.build / "bench/probe_bench"
    n = 100
    out = {"partitions": n, "kfaild": [], "peer": [], "load_source": "one-broker lab, RF 1"}
    warmup, duration = (5, 10) if args.quick else (10, 30)
    for ms in args.kfaild_intervals:
        cfg = s.work / f"res-{ms}.yaml"
        db = s.work / f"res-{ms}.db"
        fresh_db(db)
        kfaild_config(s, cfg, db, f"bench-p{n}", n, interval_ms=ms, one_broker=True)
        # The resolution claim: 1 ms sustained for 60 s.
        secs = duration if ms > 1 or args.quick else 60
        res, _, rec = run_json(
            [pb, "--config", cfg, "--warmup", warmup, "--duration", secs], timeout=600
        )
        out["kfaild"].append(
            {"interval_ms": ms, **(res or {}), **rec, "sustained": sustained(res, ms * 1000)}
        )
        fresh_db(db)
        save(s, "resolution", out)
    for ms in args.peer_intervals:
        r = peer_run(s, n, ms, warmup, duration, csv=True, topic=f"peer-p{n}", one_broker=True)
        r["sustained"] = sustained(r, ms * 1000)
        out["peer"].append({"interval_ms": ms, **r})
        save(s, "resolution", out)
