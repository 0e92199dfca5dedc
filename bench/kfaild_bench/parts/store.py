"""store: store_bench's inserts, the writer at the probe's rates, and one database grown."""

import json
from pathlib import Path

from ..common import fresh_db, run_json
from ..results import merge_runs, save
from ..stats import median


def part_store(s, args):
    sb = s.build / "bench/store_bench"
    s.work.mkdir(parents=True, exist_ok=True)
    old = s.results / "store.json"
    out = json.loads(old.read_text()) if old.exists() else {}
    for k in ("part", "generated", "machine"):
        out.pop(k, None)
    steps = args.store_steps.split(",")
    if "insert" in steps:
        store_insert(s, args, sb, out)
    if "paced" in steps:
        store_paced(s, args, sb, out)
    if "growth" in steps:
        store_growth(s, args, sb, out)


def store_paced(s, args, sb, out):
    """The writer at the probe's own rates (P partitions × 50 samples/s), so its batches are
    as small as in kfaild: CPU per sample of the writer thread."""
    out["paced"] = []
    for partitions in (3, 100, 1000):
        rate = partitions * 50
        n = rate * (10 if args.quick else 30)
        db = s.work / f"store-paced-{partitions}.db"
        fresh_db(db)
        res, _, rec = run_json(
            [sb, "write", "--db", db, "--samples", n, "--partitions", partitions,
             "--rate", rate, "--progress", 0],
            timeout=600,
        )  # fmt: skip
        out["paced"].append({"partitions": partitions, **(res or {}), **rec})
        fresh_db(db)
        save(s, "store", out)


def store_insert(s, args, sb, out):
    out["insert_runs"] = []
    n = 1_000_000 if args.quick else 3_000_000
    for i in range(3):
        db = s.work / f"store-insert-{i}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        res, _, rec = run_json(
            [sb, "write", "--db", db, "--samples", n, "--partitions", 3, "--progress", 0],
            timeout=600,
        )
        out["insert_runs"].append({**(res or {}), **rec})
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    out["insert_rate_median"] = median([r.get("rate_per_s") for r in out["insert_runs"]])
    out["insert_cpu_s_per_million_median"] = median(
        [r.get("cpu_s_per_million") for r in out["insert_runs"]]
    )
    save(s, "store", out)


def growth_mode(mode, last_rate, to_write):
    """How a growth step writes: as asked, or with `auto` the batch writer unless, at the rate of
    the previous step, it would take over 15 min (then store_bench --direct)."""
    if mode != "auto":
        return mode
    return "direct" if last_rate and to_write / last_rate > 900 else "writer"


def store_growth(s, args, sb, out):
    kept = {g["size"]: g for g in out.get("growth", [])}
    out["growth"] = []
    out.pop("db_deleted", None)

    db = s.work / "store-100m.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    sizes = [1_000_000, 10_000_000] if args.quick else args.store_sizes
    have = 0
    last_rate = None
    for size in sizes:
        mode = growth_mode(args.store_big_mode, last_rate, size - have)
        res, lines, rec = run_json(
            [sb, "write", "--db", db, "--samples", size - have, "--partitions", 3,
             "--progress", 10_000_000] + (["--direct"] if mode == "direct" else []),
            timeout=3600,
        )  # fmt: skip
        if res and res.get("mode") == "batch_writer":
            last_rate = res.get("rate_per_s")
        have = size
        step = {
            "size": size,
            "write": {**(res or {}), **rec},
            "progress": [x for x in lines if x.get("kind") == "write_progress"],
        }
        res, _, rec = run_json(
            [sb, "query", "--db", db, "--runs", 50, "--cold-runs", 10], timeout=900
        )
        step["query"] = {**(res or {}), **rec}
        out["growth"].append(step)
        save(s, "store", {**out, "growth": merge_runs(kept, out["growth"], "size")})
    out["growth"] = merge_runs(kept, out["growth"], "size")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    out["db_deleted"] = True
    save(s, "store", out)
