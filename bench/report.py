#!/usr/bin/env python3
"""Renders bench/results/report.md, every run's tables, from bench/results/*.json (written by
bench/run-all).

With KFAILD_BENCH_RESULTS set (a trial run's results elsewhere), renders those into
KFAILD_BENCH_RESULTS/report.md instead.

The prose that interprets the figures lives in bench/notes.md, kept by hand, and is copied in after
the generated tables; everything with a number in the tables comes from the results. The current
figures, with the command and commit of each, are kept by hand in docs/PERFORMANCE.md.
"""

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = Path(os.environ.get("KFAILD_BENCH_RESULTS") or BENCH / "results")
OUT = RESULTS / "report.md"
# CMake's own RelWithDebInfo flags, in force when CMakeLists.txt sets none (before 18fad42).
CMAKE_RELWITHDEBINFO = "-O2 -g -DNDEBUG"


def load(part):
    p = RESULTS / f"{part}.json"
    return json.loads(p.read_text()) if p.exists() else None


def build_flags(rec):
    """The compiler flags of the kfaild build a part measured: as bench/run-all read them from the
    build's compile_commands.json, or, in results recorded before it did, the RelWithDebInfo flags
    (the project's default build type) that CMakeLists.txt set at the measured commit. None when
    the commit is not recorded or not in this clone."""
    m = (rec or {}).get("machine") or {}
    if m.get("cxx_flags"):
        return m["cxx_flags"]
    if not m.get("kfaild_commit"):
        return None
    p = subprocess.run(
        ["git", "-C", str(BENCH.parent), "show", f"{m['kfaild_commit']}:CMakeLists.txt"],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        return None
    found = re.search(r'set\(CMAKE_CXX_FLAGS_RELWITHDEBINFO\s+"([^"]*)"\)', p.stdout)
    return found.group(1) if found else CMAKE_RELWITHDEBINFO


def built(rec):
    """'commit `c`, `flags`' for a part's result: what the header and the stamps say was
    measured."""
    m = (rec or {}).get("machine") or {}
    flags = build_flags(rec)
    commit = f"commit `{m['kfaild_commit']}`" if m.get("kfaild_commit") else "commit not recorded"
    return commit + (f", `{flags}`" if flags else "")


def f(v, digits=1, scale=1.0):
    if v is None:
        return "–"
    if isinstance(v, int) and scale == 1.0:
        return f"{v:,}"
    v = v / scale
    if abs(v) >= 1000 and digits <= 1:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def la(rec, key="load_before"):
    v = rec.get(key) if rec else None
    return "–" if not v else "/".join(f"{x:.2f}" for x in v)


def cmd(c):
    return f"`{c}`" if c else "–"


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def store_section(d):
    out = ["## 1. Store: inserts and queries", ""]
    if not d:
        return out + ["Not run yet: `bench/run-all --parts store`.", ""]
    out += [
        "Sustained inserts through `SqliteStore`'s batch writer (`Store::addSample` → one "
        "transaction per batch), 3 partitions in time order with noise gaps, drill stalls and "
        "their events in the same stream, each run on a fresh database in `/tmp`. The producer "
        "keeps the writer's queue under 400,000 records so nothing is dropped: the rate is what "
        "the writer sustains. CPU is the whole process (producer thread included).",
        "",
        "| run | samples | rate (samples/s) | CPU s per 1M samples | dropped | load avg before "
        "(1/5/15 min) | command |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(d["insert_runs"]):
        out.append(
            f"| {i + 1} | {f(r.get('samples'))} | {f(r.get('rate_per_s'))} | "
            f"{f(r.get('cpu_s_per_million'), 2)} | {r.get('dropped_samples', '–')} | "
            f"{la(r)} | {cmd(r.get('command'))} |"
        )
    out += [
        "",
        f"**Median: {f(d.get('insert_rate_median'))} samples/s** (goal ≥ 200,000/s), "
        f"{f(d.get('insert_cpu_s_per_million_median'), 2)} CPU-s per million samples "
        "(producer and writer threads together; the writer alone is in `writer_thread_cpu_s` "
        "of `bench/results/store.json`).",
        "",
    ]

    if d.get("paced"):
        out += [
            "### The writer at the probe's own rates",
            "",
            "`store_bench write --rate R`: samples produced in ticks at the probe's rate "
            "(P partitions × 50/s), so the writer sees batches as small as in kfaild. "
            "Writer CPU is the writer thread's own (from `/proc/self/task`); process CPU adds "
            "the synthetic producer.",
            "",
            "| partitions | rate (samples/s) | samples | writer CPU µs/sample | writer CPU share "
            "of a core | process CPU µs/sample | dropped | load avg before | command |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in d["paced"]:
            share = (r.get("writer_thread_cpu_s") / r["elapsed_s"]) if r.get("elapsed_s") else None
            out.append(
                f"| {r['partitions']} | {f(r.get('paced_rate_per_s'))} | {f(r.get('samples'))} | "
                f"**{f(r.get('writer_cpu_us_per_sample'), 1)}** | {f(share, 3)} | "
                f"{f(r.get('cpu_s_per_million'), 1)} | {r.get('dropped_samples', '–')} | "
                f"{la(r)} | {cmd(r.get('command'))} |"
            )
        out.append("")
    out += [
        "### One database grown to 100 million samples",
        "",
        "One file grown step by step (`store_bench write` continues the timeline of "
        "what is there; the mode column says whether a step went through the batch writer or "
        "`--direct`): 3 partitions × one sample per 20 ms, a noise gap of 100–400 ms every "
        "simulated minute, a drill every simulated hour: a stall of 8–10 s on every "
        "partition and kind plus 12 events). After each size, `store_bench query` measures "
        "(50 warm runs, 10 cold runs; cold = the file's pages dropped from the page cache "
        "with `posix_fadvise(DONTNEED)` before each query):",
        "",
        "- **hour**: `Store::samples` for one random partition and a random hour "
        "(180,000 rows; `limit` raised, the default 100,000 is less than an hour at 20 ms);",
        "- **gaps ≥ 1 s**: `Store::gaps` with `min_duration_us = 1 s` over the whole database;",
        "- **drill reads**: what `DrillRunner` reads for an analysis: every partition's "
        "samples from 5 s before the fault to 5 s after the stall, plus the window's events; "
        "then `analysis::analyse` on them (timed separately).",
        "",
    ]
    out += [
        "| samples | mode | simulated hours | write rate (samples/s) | write time | DB size | "
        "bytes/sample | gaps (≥1 s) | hour p50 / p99 ms | hour cold p50 / p99 ms | gaps ≥1 s p50 "
        "/ p99 ms | drill reads p50 / p99 ms | drill reads cold p50 ms | analyse p50 ms | load "
        "avg (write; query) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in d["growth"]:
        w, q = s["write"], s["query"]
        out.append(
            f"| {f(s['size'])} | {w.get('mode', '–')} | {f(w.get('simulated_hours'))} | "
            f"{f(w.get('rate_per_s'))} | "
            f"{f(w.get('elapsed_s'))} s | {f(q.get('db_bytes'), 2, 2**30)} GiB | "
            f"{f(q.get('bytes_per_sample'), 1)} | {f(q.get('gaps'))} "
            f"({f(q.get('gaps_over_1s', {}).get('rows'))}) | "
            f"{f(q.get('samples_hour', {}).get('p50_ms'), 1)} / "
            f"{f(q.get('samples_hour', {}).get('p99_ms'), 1)} | "
            f"{f(q.get('samples_hour_cold', {}).get('p50_ms'), 1)} / "
            f"{f(q.get('samples_hour_cold', {}).get('p99_ms'), 1)} | "
            f"{f(q.get('gaps_over_1s', {}).get('p50_ms'), 2)} / "
            f"{f(q.get('gaps_over_1s', {}).get('p99_ms'), 2)} | "
            f"{f(q.get('drill_reads', {}).get('p50_ms'), 2)} / "
            f"{f(q.get('drill_reads', {}).get('p99_ms'), 2)} | "
            f"{f(q.get('drill_reads_cold', {}).get('p50_ms'), 1)} | "
            f"{f(q.get('drill_analyse', {}).get('p50_ms'), 2)} | {la(w)}; {la(q)} |"
        )
    out += ["", "Commands:", ""]
    for s in d["growth"]:
        out.append(
            f"- {f(s['size'])}: {cmd(s['write'].get('command'))}, then "
            f"{cmd(s['query'].get('command'))}"
        )
    big = d["growth"][-1] if d["growth"] else None
    if big and big.get("progress"):
        out += [
            "",
            f"Write rate while the {f(big['size'])}-sample database grew (per 10M samples "
            "written in that step):",
            "",
            "| written in step | elapsed s | rate in chunk (samples/s) | CPU s in chunk | file "
            "size GiB |",
            "|---|---|---|---|---|",
        ]
        for p in big["progress"]:
            out.append(
                f"| {f(p['written'])} | {f(p['elapsed_s'])} | {f(p['chunk_rate_per_s'])} | "
                f"{f(p['chunk_cpu_s'], 1)} | {f(p['db_bytes'], 2, 2**30)} |"
            )
    if d.get("db_deleted"):
        out += ["", "The database was deleted afterwards."]
    return out + [""]


def probe_row(label, r, n):
    rss_per_rate = (
        r.get("rss_kb") / (r["acked"] / r["window_s"] / 1000)
        if r.get("acked") and r.get("rss_kb")
        else None
    )
    return (
        f"| {label} | {n} | {f(r.get('window_s'))} | {f(r.get('acked'))} | "
        f"{f(r.get('expected'))} | {f(r.get('cpu_s'), 2)} | {f(r.get('cpu_cores'), 3)} | "
        f"**{f(r.get('cpu_ms_per_1000_acked'), 1)}** | {f(r.get('rss_kb'), 1, 1024)} | "
        f"{f(rss_per_rate, 2, 1024)} | "
        f"{r.get('skipped_ticks', '–')} | {f(r.get('max_send_lateness_us'), 1, 1000)} | "
        f"{r.get('dropped_samples', '–')} | {la(r)} |"
    )


PROBE_HEADER = [
    "| who | partitions | window s | acked | expected | CPU s | cores | CPU ms per 1,000 acked | "
    "RSS MiB | RSS MiB per 1,000 msg/s | skipped ticks | max send lateness ms | dropped samples | "
    "load avg before |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def probe_section(probe, peer):
    out = ["## 2–3. Probe cost: kfaild and the article's method", ""]
    if not probe and not peer:
        return out + ["Not run yet: `bench/run-all --parts probe,peer`.", ""]
    source = (
        (probe or {}).get("load_source")
        and "the one-broker bench lab (RF 1, `min.insync.replicas=1`; its CPU is not counted "
        "in the probe's)"
        or "RF 3, `min.insync.replicas=2`, the bench lab (3 brokers + 1 controller on this "
        "machine: the brokers' own CPU is not counted in the probe's)"
    )
    out += [
        f"20 ms interval, acks=all, 64-byte messages, {source}. probe.py's rows come from "
        "the `peer` part, run separately (section 9 runs them side by side). Warm-up, then a "
        "measurement window; CPU = utime+stime of the probe "
        "process in the window; RSS at the end of the window. 'RSS per 1,000 msg/s' divides "
        "RSS by the probe rate (RSS is a level, not a flow).",
        "",
        "- **kfaild (probe_bench)**: `bench/probe_bench.cc`, kfaild's own parts wired as "
        "`server/main.cc` wires them (SqliteStore, client-log watcher, metadata poller every "
        "100 ms, ProbeRunner), so it can read the probe's skipped ticks and send lateness, "
        "which the binary does not print yet;",
        "- **kfaild (binary)**: `server/kfaild` itself; CPU and RSS from `/proc/<pid>` at the "
        "moment each 10 s status line appears, acked = the sum of the line's `acked=`;",
        "- **probe.py**: `bench/peer-probe/probe.py` (confluent-kafka "
        f"{(peer or {}).get('confluent_kafka', '?')}), writing its CSV as the article's "
        "probe does.",
        "",
    ] + PROBE_HEADER
    rows = {}
    for r in (probe or {}).get("runs", []):
        rows.setdefault(r["partitions"], []).append(("kfaild (probe_bench)", r["probe_bench"]))
        rows[r["partitions"]].append(("kfaild (binary)", r["binary"]))
    for r in (peer or {}).get("runs", []):
        rows.setdefault(r["partitions"], []).append(("probe.py", r["peer"]))
    for n in sorted(rows):
        for label, r in rows[n]:
            out.append(probe_row(label, r, n))
    out += ["", "Commands:", ""]
    for n in sorted(rows):
        for label, r in rows[n]:
            out.append(f"- {label}, {n} partitions: {cmd(r.get('command'))}")
    # Ratio, only between runs against the same cluster
    same_source = (probe or {}).get("load_source") == (peer or {}).get("load_source")
    out += ["", "### kfaild vs probe.py, CPU per message (sequential runs)", ""]
    if not same_source:
        out += [
            "Not computed: kfaild's rows ran against "
            f"{(probe or {}).get('load_source') or 'the three-broker lab'}, "
            f"probe.py's against {(peer or {}).get('load_source') or 'the three-broker lab'}: "
            "rerun both parts (`bench/run-all --parts probe,peer`)."
        ]
    else:
        out += [
            "| partitions | kfaild CPU ms / 1,000 acked | probe.py CPU ms / 1,000 acked | "
            "probe.py ÷ kfaild | probe.py acked ÷ expected |",
            "|---|---|---|---|---|",
        ]
    for n in sorted(rows) if same_source else []:
        k = next((r for who, r in rows[n] if who == "kfaild (probe_bench)"), None)
        p = next((r for who, r in rows[n] if who == "probe.py"), None)
        kc = k and k.get("cpu_ms_per_1000_acked")
        pc = p and p.get("cpu_ms_per_1000_acked")
        ratio = pc / kc if kc and pc else None
        ach = p["acked"] / p["expected"] if p and p.get("expected") else None
        out.append(f"| {n} | {f(kc, 1)} | {f(pc, 1)} | {f(ratio, 1)}× | {f(ach, 3)} |")
    out += [
        "",
        "Where kfaild's CPU goes (probe_bench, CPU seconds per thread group in the window; "
        "`b:probe` = sender + reporter + receiver, `b:store` = the SQLite writer, "
        "`b:poller` = metadata poller, `rdk:*` = librdkafka's threads; runs after kfaild "
        "named its threads show `kfaild:send`, `kfaild:report`, `kfaild:receive`, "
        "`kfaild:writer`, `kfaild:poll`, `kfaild:quorum` instead):",
        "",
    ]
    for r in (probe or {}).get("runs", []):
        t = r["probe_bench"].get("thread_cpu_s") or {}
        top = sorted(t.items(), key=lambda kv: -kv[1])[:8]
        out.append(f"- {r['partitions']} partitions: " + ", ".join(f"{k} {v:.2f}" for k, v in top))
    jit = []
    for r in (probe or {}).get("runs", []):
        j = r["probe_bench"].get("jitter")
        if j:
            jit.append(("kfaild", r["partitions"], j))
    for r in (peer or {}).get("runs", []):
        j = r["peer"].get("jitter")
        if j:
            jit.append(("probe.py", r["partitions"], j))
    if jit:
        out += [
            "",
            "### Send-time jitter at 20 ms",
            "",
            "Spacing of consecutive sends of one partition (kfaild: `send_us` of its stored "
            "samples, decoded by `bench/sample_blocks.py`; probe.py: `send_us` in its CSV), over "
            "the window after warm-up:",
            "",
            "| who | partitions | spacings | mean µs | stddev µs | p99 abs. deviation µs | min µs "
            "| max µs |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for who, n, j in sorted(jit, key=lambda x: (x[1], x[0])):
            out.append(
                f"| {who} | {n} | {f(j['n'])} | {f(j['mean_us'], 1)} | "
                f"{f(j['stddev_us'], 1)} | {f(j['p99_abs_dev_us'], 0)} | {f(j['min_us'], 0)} | "
                f"{f(j['max_us'], 0)} |"
            )
    return out + [""]


def stall_edges(dr, partition, kind):
    """kfaild − probe.py of a stall's start and end (µs), or None where either is missing."""
    k = (dr.get("kfaild") or {}).get(f"orders[{partition}] {kind}")
    peer = next((e for e in dr.get("peer") or [] if e["partition"] == partition), None)
    py = peer and peer.get(kind)
    if not k or not py or py.get("stall_start_us") is None or py.get("stall_end_us") is None:
        return None, None
    return k["start_us"] - py["stall_start_us"], k["end_us"] - py["stall_end_us"]


HELD_BACK_US = 30_000  # a send pause of 1.5 intervals (20 ms): a send late by half an interval


def sending(dr, partition):
    """The largest send pause of kfaild and of probe.py between their last message acked before
    the kill and their first sent after it (µs; None where not recorded), and whether either
    paused long enough that its stall's start is its own and not the cluster's."""
    k = (dr.get("kfaild_sending") or {}).get(str(partition))
    peer = next((e for e in dr.get("peer") or [] if e["partition"] == partition), None)
    py = peer and peer.get("sending")
    kg = k and k["largest_send_gap_us"]
    pg = py and py["largest_send_gap_us"]
    held = [
        who for who, g in (("kfaild", kg), ("probe.py", pg)) if g is not None and g > HELD_BACK_US
    ]
    return kg, pg, held


def peer_name(rec):
    """The article-method peer that measured a run: probe.py, or its C++ port
    (`--peer-impl cxx`)."""
    return "refprobe (C++)" if (rec or {}).get("peer_impl") == "cxx" else "probe.py"


def drill_section(
    d,
    title="## 4–5. One kill, four observers",
    command="bench/run-all --parts drill --probe-clients librdkafka",
):
    out = [title, ""]
    if not d:
        return out + [f"Not run yet: `{command}`.", ""]
    peer = peer_name(d["drills"][0] if d.get("drills") else None)
    if peer != "probe.py":
        # The section's text names the peer "probe.py" throughout; the C++ port stands in its place.
        return [title, ""] + [
            line.replace("probe.py", peer)
            for line in drill_section(
                {**d, "drills": [{**dr, "peer_impl": None} for dr in d["drills"]]}, title, command
            )[2:]
        ]
    if d.get("invocation"):
        out += [f"Run: `{d['invocation']}`.", ""]
    out += [
        "Per drill: kfaild (binary, topic `orders`, assignment `1:2:3,2:3:1,3:1:2`, "
        "`min.insync.replicas=2`, so broker 1 leads p0 and follows p1, p2), probe.py on the "
        "**same topic** (each probe ignores the other's messages by run id: same partitions, "
        "same leaders, so the same stall), "
        + (
            "Kafka's `EndToEndLatency` on `e2e-k1` and "
            "`ProducerPerformance` (50 msg/s, acks=all) on `perf-k1`, both 1 partition with "
            "assignment `1:2:3` (broker 1 leads), all started together"
            if any(dr.get("with_tools", True) for dr in d["drills"])
            else "both started together, nothing else beside them"
        )
        + "; 20 s later `lab kill 1`; "
        "30 s later `lab start 1 --wait`; 10 s later everything stops. A preferred-leader "
        "election before each drill puts the leaders back. Kafka defaults: "
        "`broker.session.timeout.ms` 9 s.",
        "",
        "Stall = the longest interval between consecutive acks (receives) of a partition that "
        "ends after the fault and starts before fault + 30 s (kfaild: from its `gaps` table; "
        "probe.py: `gaps.py` on its CSV).",
        "",
    ]
    for i, dr in enumerate(d["drills"]):
        linger = dr.get("peer_linger_ms")
        out += [
            f"### Drill {i + 1} (load avg at kill {la(dr, 'load_at_kill')}; kfaild's probe.client "
            f"{dr.get('kfaild_client') or 'librdkafka'}, probe.py's linger.ms "
            f"{'5 (default)' if linger is None else f(linger, 0)})",
            "",
            f"`lab kill 1` printed: `{dr.get('lab_kill_output', '')}`",
            "",
            "| partition | kind | kfaild stall s | probe.py stall s | kfaild − probe.py ms | "
            "of which the start (last before the kill) ms | the end (first after) ms | "
            "largest send pause before the kill, kfaild / probe.py ms |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for a in dr["agreement"]:
            start, end = stall_edges(dr, a["partition"], a["kind"])
            kg, pg, held = sending(dr, a["partition"])
            pause = (
                f"{f(kg, 1, 1000)} / {f(pg, 1, 1000)}"
                + (f" ({' and '.join(held)} held back)" if held else "")
                if a["kind"] == "ack"
                else ""
            )
            out.append(
                f"| {a['partition']} | {a['kind']} | {f(a['kfaild_us'], 3, 1e6)} | "
                f"{f(a['peer_us'], 3, 1e6)} | {f(a['diff_us'], 1, 1000)} | "
                f"{f(None if start is None else -start, 1, 1000)} | {f(end, 1, 1000)} | {pause} |"
            )
        ph = dr.get("kfaild_phases") or {}
        if ph:
            out += [
                "",
                f"kfaild's events (ms after the kill): metadata poller saw broker 1 gone at "
                f"{f(ph.get('broker_gone_ms'), 0)}; per partition: new leader in metadata / "
                "applied by the consumer / applied by the producer: "
                + "; ".join(
                    f"p{k} {f(v.get('metadata_new_leader_ms'), 0)} / "
                    f"{f(v.get('consumer_applied_ms'), 0)} / {f(v.get('producer_applied_ms'), 0)}"
                    for k, v in sorted(ph.items())
                    if isinstance(v, dict)
                ),
            ]
        e, p = dr.get("e2e"), dr.get("perf")
        if e is None or p is None:
            out += ["", "Kafka's tools did not run beside the probes in this drill.", ""]
            continue
        out += [
            "",
            f"- EndToEndLatency (one message at a time, prints one line per 1,000): longest "
            f"interval between its progress lines spanning the fault "
            f"**{f(e.get('longest_line_interval_us'), 2, 1e6)} s** (normally "
            f"{f(e.get('normal_line_interval_us'), 2, 1e6)} s); the largest latency it printed "
            f"{f(e.get('max_latency_ms_printed'), 1)} ms; its summary: "
            + "; ".join(f"`{s}`" for s in e.get("summary", [])),
            f"- ProducerPerformance: largest per-window max latency around the fault "
            f"**{f(p.get('max_latency_ms_around_fault'), 0)} ms** (before the fault: "
            f"{f(p.get('max_latency_ms_before_fault'), 0)} ms)"
            + (
                "; windows: " + " / ".join(f"`{x}`" for x in p.get("lines_around_fault", [])[:4])
                if p.get("lines_around_fault")
                else ""
            ),
            "",
        ]
    groups, ends, sent = {}, {}, {}
    for dr in d["drills"]:
        for a in dr["agreement"]:
            if a["diff_us"] is None:
                continue
            where = "p0 (leader killed)" if a["partition"] == 0 else "p1, p2 (leader alive)"
            groups.setdefault((where, a["kind"]), []).append(abs(a["diff_us"]))
            kg, pg, held = sending(dr, a["partition"])
            if a["kind"] == "ack" and kg is not None and pg is not None and not held:
                sent.setdefault(where, []).append(abs(a["diff_us"]))
            end = stall_edges(dr, a["partition"], a["kind"])[1]
            if end is not None:
                ends.setdefault((where, a["kind"]), []).append(abs(end))
    if groups:
        out += [
            "**Agreement** (bound: interval + 10 ms = 30 ms), |kfaild − probe.py| over the drills:",
            "",
            "| partitions | kind | pairs | max ms | median ms | within 30 ms |",
            "|---|---|---|---|---|---|",
        ]
        for (where, kind), v in sorted(
            groups.items(), key=lambda kv: (kv[0][0] != "p1, p2 (leader alive)", kv[0][1])
        ):
            out.append(
                f"| {where} | {kind} | {len(v)} | {f(max(v), 1, 1000)} | "
                f"{f(median(v), 1, 1000)} | {'yes' if max(v) <= 30_000 else 'no'} |"
            )
        out.append("")
    if any(
        sending(dr, a["partition"])[0] is not None for dr in d["drills"] for a in dr["agreement"]
    ):
        out += [
            "The ack pairs in which **both probes kept sending up to the kill** (no send pause "
            "over "
            f"{HELD_BACK_US // 1000} ms, 1.5 intervals, between a probe's last message acked "
            "before "
            "the kill and its first sent after it): a probe that paused measured its own pause as "
            "the start of the stall, a figure kfaild's analysis calls inconclusive in its own "
            "runs.",
            "",
            "| partitions | pairs | of all ack pairs | max ms | median ms | within 30 ms |",
            "|---|---|---|---|---|---|",
        ]
        for where in ("p1, p2 (leader alive)", "p0 (leader killed)"):
            v = sent.get(where, [])
            total = len(groups.get((where, "ack"), []))
            out.append(
                f"| {where} | {len(v)} | {total} | {f(max(v) if v else None, 1, 1000)} | "
                f"{f(median(v) if v else None, 1, 1000)} | "
                f"{sum(1 for x in v if x <= 30_000)} of {len(v)} |"
            )
        out.append("")
    if ends:
        out += [
            "The same pairs, the stall's **end** alone (each probe's first ack or receipt after "
            "the kill, kfaild − probe.py): the start is each probe's last one before the kill, "
            "up to one interval early by its own send phase.",
            "",
            "| partitions | kind | pairs | max ms | median ms | within 1 ms |",
            "|---|---|---|---|---|---|",
        ]
        for (where, kind), v in sorted(
            ends.items(), key=lambda kv: (kv[0][0] != "p1, p2 (leader alive)", kv[0][1])
        ):
            out.append(
                f"| {where} | {kind} | {len(v)} | {f(max(v), 1, 1000)} | {f(median(v), 2, 1000)} | "
                f"{sum(1 for x in v if x <= 1000)} of {len(v)} |"
            )
        out.append("")
    out += ["Commands (drill 1):", ""]
    for k, v in d["drills"][0]["commands"].items():
        out.append(f"- {k}: {cmd(v)}")
    return out + [""]


def resolution_section(d):
    out = ["## 6. Resolution: the smallest interval on 100 partitions", ""]
    if not d:
        return out + ["Not run yet: `bench/run-all --parts resolution`.", ""]
    out += [
        "Sustained = no skipped tick in the window: the sender never fell behind (the pacer "
        "skips a tick when a send is late by more than one interval). Whether the lab acked "
        "everything is the separate 'acked ÷ expected' column. Load source: "
        + (
            d.get("load_source")
            or "the three-broker bench lab (on this machine it, not the "
            "probe, ran out first: see the notes at the top)"
        )
        + ". The issue's claim: 100 "
        "partitions at 1 ms for 60 s with under 0.1 % skipped ticks (the skipped ÷ ticks "
        "column).",
        "",
        "| who | interval ms | window s | msg/s | acked ÷ expected | skipped ticks | skipped ÷ "
        "ticks | max send lateness ms | CPU cores | CPU ms / 1,000 acked | sustained | load avg "
        "before | command |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    best = {}
    for who, key in (("kfaild", "kfaild"), ("probe.py", "peer")):
        for r in d.get(key, []):
            rate = d["partitions"] * 1000 / r["interval_ms"]
            ach = r["acked"] / r["expected"] if r.get("expected") else None
            ticks = (r.get("ticks") or 0) + (r.get("skipped_ticks") or 0)
            share = (
                r["skipped_ticks"] / ticks if ticks and r.get("skipped_ticks") is not None else None
            )
            out.append(
                f"| {who} | {r['interval_ms']} | {f(r.get('window_s'))} | {f(rate)} | {f(ach, 3)} "
                "| "
                f"{r.get('skipped_ticks', '–')} | "
                f"{f(share * 100 if share is not None else None, 3)} % | "
                f"{f(r.get('max_send_lateness_us'), 2, 1000)} | "
                f"{f(r.get('cpu_cores'), 2)} | {f(r.get('cpu_ms_per_1000_acked'), 1)} | "
                f"{'yes' if r.get('sustained') else 'no'} | {la(r)} | {cmd(r.get('command'))} |"
            )
            if r.get("sustained"):
                best[who] = min(best.get(who, 1e9), r["interval_ms"])
    out += [
        "",
        "Smallest sustained interval: "
        + (
            ", ".join(f"**{who} {ms} ms**" for who, ms in best.items())
            if best
            else "**none of the intervals tried, for either probe, on this machine**"
        )
        + ".",
        "",
    ]
    return out


def growth_section(store, probe, peer):
    out = ["## 7. How the figures grow", ""]
    rows = []
    paced = {r["partitions"]: r for r in (store or {}).get("paced", [])}
    for r in (probe or {}).get("runs", []):
        k = r["probe_bench"]
        p = next(
            (x["peer"] for x in (peer or {}).get("runs", []) if x["partitions"] == r["partitions"]),
            {},
        )
        w = paced.get(r["partitions"], {})
        wshare = (w["writer_thread_cpu_s"] / w["elapsed_s"]) if w.get("elapsed_s") else None
        rows.append(
            f"| {r['partitions']} partitions at 20 ms ({f(r['partitions'] * 50)} msg/s) | "
            f"{f(k.get('cpu_cores'), 3)} cores, {f(k.get('rss_kb'), 0, 1024)} MiB, "
            f"{f(k['acked'] / k['expected'] if k.get('expected') else None, 2)} of expected acked "
            "| "
            f"{f(wshare, 3)} cores ({f(w.get('writer_cpu_us_per_sample'), 1)} µs/sample) | "
            f"{f(p.get('cpu_cores'), 3)} cores, {f(p.get('rss_kb'), 0, 1024)} MiB, "
            f"{f(p['acked'] / p['expected'] if p.get('expected') else None, 2)} of expected acked |"
        )
    if rows:
        out += (
            [
                "Probe load (the probe columns are bounded by what the lab acked; the writer "
                "column is `store_bench --rate` at the same rate, with no Kafka involved):",
                "",
                "| load | kfaild (probe_bench) | kfaild's store writer alone at that rate | "
                "probe.py |",
                "|---|---|---|---|",
            ]
            + rows
            + [""]
        )
    if store and store.get("growth"):
        out += [
            "Stored data (3 partitions; 100M samples = 7.7 days of 3 partitions at 20 ms, "
            "about the default 168 h retention; at 1,000 partitions the same retention would "
            "hold 30 billion samples, about 1 TB at these bytes/sample):",
            "",
            "| stored samples | hour of one partition p50 ms | gaps ≥ 1 s p50 ms | drill reads "
            "p50 ms | bytes/sample |",
            "|---|---|---|---|---|",
        ]
        for s in store["growth"]:
            q = s["query"]
            out.append(
                f"| {f(s['size'])} | {f(q.get('samples_hour', {}).get('p50_ms'), 1)} | "
                f"{f(q.get('gaps_over_1s', {}).get('p50_ms'), 2)} | "
                f"{f(q.get('drill_reads', {}).get('p50_ms'), 2)} | "
                f"{f(q.get('bytes_per_sample'), 1)} |"
            )
        out.append("")
    return out


def outage_section(d):
    out = ["## 8. Probe recovery after an outage", ""]
    if not d:
        return out + ["Not run yet: `bench/run-all --parts outage`.", ""]
    out += [
        f"The kfaild binary probes a fresh topic of {d['partitions']} partitions (assignment "
        f"`{d['assignment']}`, `min.insync.replicas=2`) every {d['interval_ms']} ms with its "
        "defaults (`probe.max_outstanding_ms` 2000: sends are held back while a partition "
        "has a message without a delivery report older than 2 s; idempotent producer, "
        "`message.timeout.ms` 60000, its clients' `reconnect.backoff.max.ms` 1000). Once the "
        "probe has been steady for 10 s, `lab kill` 1, 2 "
        "and 3 (SIGKILL; the controller stays up); after the outage length, `lab up` starts "
        "them again, and from that moment `bench/run-all` reads `GET "
        "/api/v1/clusters/bench` every 100 ms. **Writable** = the first read whose metadata (a "
        "snapshot kfaild's poller took after the start) shows every partition with a leader "
        "and at least 2 in-sync replicas, i.e. the cluster accepts acks=all writes again; "
        "**acks resumed** = the first read in which every "
        "partition's `current_ack_gap_seconds` is below 1 s, in seconds after `lab up` began; "
        "**steady** = the first read in which every partition passes the drill guards' probe "
        "checks (`holding_since_us` null, `oldest_outstanding_age_seconds` null or below 1 s, "
        "`current_ack_gap_seconds` below 0.5 s, `current_receive_gap_seconds` below 1 s). "
        "The claim: steady within 10 s of acks "
        "resuming (≤ 10 s); steady after writable is the same claim counted from the "
        "cluster's side, so it includes how long kfaild's clients take to reconnect. Held "
        "ticks and failed sends are the probe's counters summed over the partitions, from the "
        "kill to the end of the observation (10 s after steady, longer "
        "while the consumer has not received again, at most 60 s); the longest ack gap is the "
        "longest gap ending after the kill in `GET /api/v1/clusters/bench/gaps?kind=ack`. "
        "Receives resumed (every partition's `current_receive_gap_seconds` below 1 s) is one of "
        "the steady checks, shown on its own beside them; `lab up` returned = when the lab "
        "saw every broker registered and unfenced.",
        "",
        "| outage s | writable after start s | acks resumed after start s | steady after acks s | "
        "≤ 10 s | steady after writable s | held ticks | failed sends | longest ack gap s | "
        "receives resumed after start s | `lab up` returned after start s | load avg at kill |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d.get("runs", []):
        if r.get("error"):
            out.append(
                f"| {r['outage_s']} | failed: {r['error'][:200]} | | | | | | | | | | "
                f"{la(r, 'load_at_kill')} |"
            )
            continue
        c = r.get("counters_delta") or {}
        gap = r.get("longest_ack_gap") or {}
        met = (
            "yes"
            if r.get("claim_met")
            else "no"
            if r.get("steady_after_acks_s") is not None
            else "never steady"
        )
        out.append(
            f"| {r['outage_s']} | {f(r.get('writable_s'), 1)} | "
            f"{f(r.get('acks_resumed_s'), 1)} | **{f(r.get('steady_after_acks_s'), 1)}** | "
            f"{met} | {f(r.get('steady_after_writable_s'), 1)} | {f(c.get('held_ticks'))} | "
            f"{f(c.get('send_failed'))} | {f(gap.get('duration_s'), 1)} | "
            f"{f(r.get('receives_resumed_s'), 1)} | {f(r.get('lab_up_s'), 1)} | "
            f"{la(r, 'load_at_kill')} |"
        )
    b = d.get("build") or {}
    if b:
        changed = b.get("uncommitted_at_run") or []
        before = (
            b.get("commit_time") and b.get("binary_mtime") and b["binary_mtime"] < b["commit_time"]
        )
        out += [
            "",
            f"kfaild from `{b.get('dir')}` (checked out: commit `{b.get('commit') or '?'}` "
            f"of {b.get('commit_time') or '?'}; binary of {b.get('binary_mtime')}"
            + (", built from the working tree before that commit was made" if before else "")
            + ")"
            + (
                "; the source tree had uncommitted changes when the part ran: "
                + ", ".join(f"`{x}`" for x in changed)
                if changed
                else ""
            )
            + ".",
        ]
    runs = [r for r in d.get("runs", []) if r.get("command")]
    if runs:
        out += ["", "Commands:", ""]
        for c in dict.fromkeys(r["command"] for r in runs):
            out.append(f"- {cmd(c)}")
        out.append(f"- kfaild, per outage: {cmd(runs[0].get('kfaild_command'))}")
    return out + [""]


def rng(xs, digits=1):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "–"
    return f"{f(statistics.median(xs), digits)} ({f(min(xs), digits)}–{f(max(xs), digits)})"


def side_section(d):
    out = [
        "## 9. Side by side: kfaild, the article's probe, KMinion and EndToEndLatency at the same "
        "time",
        "",
    ]
    if not d:
        return out + ["Not run yet: `bench/run-all --parts side`.", ""]
    commits = list(
        dict.fromkeys(r["kminion_commit"] for r in d.get("runs", []) if r.get("kminion_commit"))
    )
    built = (
        f"built from source at commit {', '.join(f'`{c[:12]}`' for c in commits)}"
        if commits
        else "not yet measured in the runs below"
    )
    out += [
        f"Load source: {d.get('load_source')} at `{d.get('bootstrap')}`: the brokers replicate "
        "nothing, so on this machine they ack what the probes send; their JVMs are other "
        "processes and CPU is measured per process (`/proc/<pid>/stat`), so the lab's cost "
        "counts against none of the probes (its cores are shown beside). Per run, started "
        "together: **kfaild** (the binary, its own topic `side-kfaild-pN`, created by "
        "kfaild), **probe.py** (the article's method, confluent-kafka, its own topic "
        "`side-peer-pN` of the same shape: N partitions, RF 1, writing its CSV as the "
        "article's probe does), **KMinion**'s end-to-end probe (Redpanda's Kafka exporter, "
        f"Go and franz-go, {built}; only its end-to-end probe "
        "enabled, on its own topic `side-kminion-pN` that it creates with partitionsPerBroker "
        "N, RF 1; probeInterval 20ms, requiredAcks all; one ~137-byte JSON message per "
        "partition per interval, consumed back by its own consumer group) and Kafka's "
        "**EndToEndLatency** (one message at a time on `side-e2e`: the last observer; a low, "
        "steady latency says the cluster was not the bottleneck). Once kfaild has acked on "
        "every partition, probe.py is probing and KMinion has acked on every partition: a "
        "warm-up, then one window read for all four at the same moments — kfaild's acked "
        "from `GET /api/v1/clusters/bench`, probe.py's from its own status line (every "
        "0.5 s, its counters and `getrusage` at the same instant), KMinion's from its "
        "`/metrics` (`kminion_end_to_end_messages_produced_total` less "
        "`kminion_end_to_end_messages_produced_failed_total`, summed over partitions). 20 ms "
        "interval, acks=all, 64-byte payloads for kfaild and probe.py. `librdkafka` = CPU of "
        "threads named `rdk:*`; `own` = the rest (kfaild's sender, reporter, receiver, "
        "poller, writer, HTTP; Python's interpreter); KMinion's threads are Go's, not split.",
        "",
        "| partitions | kfaild client | run | window s | kfaild acked ÷ expected | probe.py acked "
        "÷ expected | KMinion acked ÷ expected | kfaild CPU ms / 1,000 acked | probe.py CPU ms / "
        "1,000 acked | KMinion CPU ms / 1,000 acked | probe.py ÷ kfaild | KMinion ÷ kfaild | "
        "kfaild cores (librdkafka / own) | probe.py cores (librdkafka / own) | KMinion cores | "
        "kfaild RSS MiB | probe.py RSS MiB | KMinion RSS MiB | kfaild librdkafka clients | "
        "EndToEndLatency ms (median / max printed) | EndToEndLatency cores | lab cores | load avg "
        "at start |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_n = {}
    for r in d.get("runs", []):
        n = r["partitions"]
        if r.get("error"):
            out.append(
                f"| {n} | {r.get('kfaild_client', 'librdkafka')} | {r['repeat'] + 1} | failed: "
                f"{r['error'][:160]} |" + " |" * 19
            )
            continue
        k, p, m, e = r["kfaild"], r.get("peer") or {}, r.get("kminion") or {}, r.get("e2e")
        client = (
            r.get("kfaild_client", "librdkafka")
            + (f"; peer {peer_name(r)}" if peer_name(r) != "probe.py" else "")
            + (
                f"; window at load ≤ {r['settle_load']:g}"
                if r.get("settle_load") is not None
                else ""
            )
            + "".join(f"; probe.{k} {v}" for k, v in (r.get("kfaild_probe") or {}).items())
        )
        by_n.setdefault((n, client, r.get("with_e2e", True)), []).append(r)
        w = r["window_s"]
        waited = (
            f" (waited {f(r.get('settle_waited_s'), 0)} s)"
            if r.get("settle_load") is not None
            else ""
        )
        out.append(
            f"| {n} | {client}{waited} | {r['repeat'] + 1} | {f(w)} | "
            f"{f(k.get('acked_fraction'), 3)} | "
            f"{f(p.get('acked_fraction'), 3)} | {f(m.get('acked_fraction'), 3)} | "
            f"{f(k.get('cpu_ms_per_1000_acked'), 1)} | {f(p.get('cpu_ms_per_1000_acked'), 1)} | "
            f"{f(m.get('cpu_ms_per_1000_acked'), 1)} | "
            f"**{f(r.get('ratio_peer_over_kfaild'), 1)}×** | "
            f"**{f(r.get('ratio_kminion_over_kfaild'), 1)}×** | "
            f"{f(k['cpu_cores'], 3)} ({f(k['librdkafka_cpu_s'] / w, 3)} / "
            f"{f(k['own_cpu_s'] / w, 3)}) | "
            f"{f(p.get('cpu_cores'), 3)} ({f(p['librdkafka_cpu_s'] / w if p else None, 3)} / "
            f"{f(p['own_cpu_s'] / w if p else None, 3)}) | {f(m.get('cpu_cores'), 3)} | "
            f"{f(k['rss_kb'], 0, 1024)} | {f(p.get('rss_kb'), 0, 1024)} | "
            f"{f(m.get('rss_kb'), 0, 1024)} | {k.get('librdkafka_clients')} | "
            + (
                f"{f(e.get('latency_ms_printed_median'), 1)} / "
                f"{f(e.get('latency_ms_printed_max'), 1)} | "
                f"{f(e.get('cpu_cores'), 3)} | "
                if e
                else "not run | not run | "
            )
            + f"{f(r.get('lab_cpu_cores'), 2)} | "
            f"{la(r, 'load_at_window_start')} |"
        )
    if by_n:
        out += [
            "",
            "### Ratios: median (range) over the runs of each size",
            "",
            "| partitions | kfaild client | beside EndToEndLatency | runs | probe.py ÷ kfaild, "
            "CPU per 1,000 acked | KMinion ÷ kfaild, CPU per 1,000 acked | kfaild CPU ms / 1,000 "
            "acked | probe.py CPU ms / 1,000 acked | KMinion CPU ms / 1,000 acked | kfaild cores "
            "| kfaild acked ÷ expected | probe.py acked ÷ expected | KMinion acked ÷ expected | "
            "kfaild RSS MiB | librdkafka wake-ups per acked message, kfaild / probe.py |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for (n, client, with_e2e), rs in sorted(by_n.items()):
            out.append(
                f"| {n} | {client} | {'yes' if with_e2e else 'no'} | {len(rs)} | "
                f"**{rng([r.get('ratio_peer_over_kfaild') for r in rs])}×** | "
                f"**{rng([r.get('ratio_kminion_over_kfaild') for r in rs])}×** | "
                f"{rng([r['kfaild'].get('cpu_ms_per_1000_acked') for r in rs])} | "
                f"{rng([(r.get('peer') or {}).get('cpu_ms_per_1000_acked') for r in rs])} | "
                f"{rng([(r.get('kminion') or {}).get('cpu_ms_per_1000_acked') for r in rs])} | "
                f"{rng([r['kfaild'].get('cpu_cores') for r in rs], 3)} | "
                f"{rng([r['kfaild'].get('acked_fraction') for r in rs], 3)} | "
                f"{rng([(r.get('peer') or {}).get('acked_fraction') for r in rs], 3)} | "
                f"{rng([(r.get('kminion') or {}).get('acked_fraction') for r in rs], 3)} | "
                f"{rng([r['kfaild'].get('rss_kb') / 1024 for r in rs], 0)} | "
                f"{rng([_wakeups_per_acked(r['kfaild'], r['window_s']) for r in rs], 2)} / "
                f"{rng([_wakeups_per_acked(r.get('peer') or {}, r['window_s']) for r in rs], 2)} |"
            )
    timed = [
        r
        for r in d.get("runs", [])
        if (r.get("timing") or {}).get("kfaild") and (r.get("timing") or {}).get("peer")
    ]
    if timed:
        out += [
            "",
            "### Timing: send → ack latency of the same window, kfaild vs the article's client",
            "",
            "Both probes side by side on the same broker, each message sent in the window "
            "(kfaild's from "
            "its database, probe.py's from its CSV): a client of kfaild's own must not make acks "
            "look "
            "faster or slower than confluent-kafka's does.",
            "",
            "The peer is probe.py unless the row names refprobe (`bench/peer-probe/refprobe.cc`, "
            "the same "
            "method in C++ on librdkafka, `--peer-impl cxx`: its acks timed in delivery reports "
            "served by a "
            "thread of their own, none of Python's loop in them).",
            "",
            "Per tick (a probe's messages of one tick, grouped by send time), the median over the "
            "ticks "
            "of the tick's first and last ack: kfaild's wire client sends a tick as one Produce "
            "request "
            "per broker; librdkafka sends one per partition, which the broker answers one after "
            "the other "
            "on the connection, so the peer's acks of a tick spread over that queue, and its "
            "first ack of "
            "a tick is the one that waited behind none of its own requests.",
            "",
            "| partitions | kfaild client | peer | peer linger.ms | run | kfaild p50 ms | peer "
            "p50 ms | p50 difference ms | kfaild p99 ms | peer p99 ms | kfaild mean ms | peer "
            "mean ms | per tick, first / last ack p50 ms: kfaild | peer | kfaild p50 − peer's "
            "first of tick ms | peer acked ÷ expected |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in timed:
            k, p = r["timing"]["kfaild"], r["timing"]["peer"]
            linger = r.get("peer_linger_ms")
            first = p.get("tick_first_p50_ms")
            behind_first = k["p50_ms"] - first if first is not None else None
            out.append(
                f"| {r['partitions']} | {r.get('kfaild_client', 'librdkafka')} | {peer_name(r)} | "
                f"{'5 (default)' if linger is None else f(linger, 0)} | {r['repeat'] + 1} | "
                f"{f(k['p50_ms'], 2)} | {f(p['p50_ms'], 2)} | "
                f"**{f(k['p50_ms'] - p['p50_ms'], 2)}** | "
                f"{f(k['p99_ms'], 2)} | {f(p['p99_ms'], 2)} | {f(k['mean_ms'], 2)} | "
                f"{f(p['mean_ms'], 2)} | "
                f"{f(k.get('tick_first_p50_ms'), 2)} / {f(k.get('tick_last_p50_ms'), 2)} | "
                f"{f(p.get('tick_first_p50_ms'), 2)} / {f(p.get('tick_last_p50_ms'), 2)} | "
                f"{f(behind_first, 2)} | "
                f"{f((r.get('peer') or {}).get('acked_fraction'), 3)} |"
            )
    first = next((r for r in d.get("runs", []) if r.get("commands")), None)
    if first:
        out += ["", f"Command: `{d.get('invocation')}`; per run (first shown):", ""]
        for k, v in first["commands"].items():
            out.append(f"- {k}: {cmd(v)}")
        if first.get("kminion_config"):
            out += [
                "",
                "KMinion's configuration (CONFIG_FILEPATH), first run:",
                "",
                "```yaml",
                first["kminion_config"].rstrip(),
                "```",
            ]
    return out + [""]


def _wakeups_per_acked(proc, window_s):
    """librdkafka threads' wake-ups (voluntary context switches) per acknowledged message; None
    for runs recorded before the bench counted them."""
    w, acked = proc.get("librdkafka_wakeups_per_s"), proc.get("acked")
    return w * window_s / acked if w is not None and acked else None


def idle_section(d, poll):
    out = ["## 10. librdkafka clients per cluster, and the idle cost", ""]
    out += [
        "Per configured cluster kfaild runs **three** librdkafka clients: the probe's producer "
        "and consumer, and one **observer** client for the metadata poller "
        "(`observe::makeObserverClient`); a cluster with an `inventory` (drills) has a "
        "**fourth**, of the same kind, for the drill engine's admin calls. Neither is the "
        "probe's producer or consumer, and the admin does not share the poller's, on purpose: "
        "(1) a broker answers the requests of one connection one at a time, so a metadata "
        "request on the producer's connection waits behind its acks=all produce requests — "
        "in a kill drill, the whole detection time of a follower's stall (measured in "
        "section 11); likewise admin requests forwarded to a dead controller, seconds each, "
        "held the poller's polls on a shared client (the reliability test that kills the "
        "controller and then every broker saw no `broker_gone`); (2) every metadata answer "
        "updates the leader cache of the handle that asked, so a poller on the probe's own "
        "clients would tell them of a new leader within 100 ms and shorten the "
        "client-discovery phase the probe exists to measure (the article's 'fencing → new "
        "leader + client metadata update').",
        "",
        "Properties kfaild sets on its clients, and why (everything else is librdkafka 2.14.2's "
        "default, and a user's `client:` setting wins wherever kfaild says 'unless set'):",
        "",
        "| client | property | value | why |",
        "|---|---|---|---|",
        "| producer | `acks` | all | the article's probe; a stall of acks=all is what kfaild "
        "measures |",
        "| producer | `enable.idempotence` | true (unless set) | retries neither duplicate nor "
        "reorder what is measured; every message has a fate within `message.timeout.ms` |",
        "| producer | `message.timeout.ms` | `probe.message_timeout_ms` (60 s) | a bound on every "
        "message's fate |",
        "| producer | `queue.buffering.max.messages` | 10,000,000 (unless set) | a limit, not an "
        "allocation: the probe's own bound (`probe.max_outstanding*`) keeps the queue at "
        "partitions × 200 at most; librdkafka's 100,000 would refuse sends at 1,000 partitions |",
        "| producer, consumer | `reconnect.backoff.max.ms` | 1000 (unless set) | a returning "
        "broker is seen within a second (default 10 s + jitter) |",
        "| producer, observer | `allow.auto.create.topics` | false | a metadata request for a "
        "missing topic must not create it |",
        "| consumer | `group.id`, `enable.auto.commit` false, `enable.auto.offset.store` false, "
        "`auto.offset.reset` latest, `enable.partition.eof` false | | partitions are assigned (no "
        "group protocol, nothing committed) from their end at set-up |",
        "| consumer | `fetch.max.bytes` | 4 MiB (unless set) | bounds a fetch response (default "
        "50 MiB per broker); 4 MiB is 30,000+ probe messages, far more than one fetch interval "
        "brings at 1,000 partitions × 50/s |",
        "| consumer | `queued.max.messages.kbytes` | 16 MiB (unless set) | bounds the pre-fetched "
        "queue (default 64 MiB) after an outage's backlog; the receiver drains it continuously |",
        "",
        "Left at librdkafka's defaults after checking them: `linger.ms` 5 (a longer linger would "
        "add to every ack time the probe measures; a shorter one sends more requests), "
        "`statistics.interval.ms` 0 (off: no stats timer), `topic.metadata.refresh.interval.ms` "
        "300 s (the clients refresh on errors anyway; the observer polls every 100 ms on its "
        "own), `fetch.wait.max.ms` 500 (a fetch returns as soon as a probe message arrives, "
        "every 20 ms; the 500 ms only bounds an idle fetch), `fetch.queue.backoff.ms` 1000 "
        "(applies only when the pre-fetch queue is full, which the receiver prevents), "
        "`enable.sparse.connections` true (a client connects only to brokers it needs), "
        "`socket.connection.setup.timeout.ms` 30 s (a dead broker refuses connections at "
        "once on a live host), `fetch.min.bytes` 1 (a probe message is received as soon as "
        "the broker has it; section 12 measures what batching would save and cost). "
        "`socket.blocking.max.ms` is gone in librdkafka 2.x: each broker "
        "thread wakes at least once a second whatever the settings (`rd_kafka_max_block_ms` "
        "in `rdkafka_broker.c`), so an idle client costs a few wake-ups per second per "
        "broker.",
        "",
    ]
    if not d:
        out += ["Idle cost not measured yet: `bench/run-all --parts idle`.", ""]
    else:
        runs = d.get("runs") or [d["run"]]
        out += [
            "**Idle cost per cluster.** kfaild has no probe pause (neither the API nor the "
            "drill guards stop the sends), so it is measured with the probe at its "
            "lowest rate: one partition, `interval_ms: 60000`, on the one-broker lab, "
            f"after set-up and 10 s more, over {f(runs[0].get('window_s'))} s, once per probe "
            "client:",
            "",
            "| probe client | CPU ms per s | librdkafka threads ms/s | kfaild's own threads ms/s "
            "| threads | librdkafka clients | RSS MiB | load avg before | command |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in runs:
            if r.get("error"):
                out.append(
                    f"| {r.get('probe_client', 'librdkafka')} | failed: {r['error'][:300]} |"
                    + " |" * 7
                )
                continue
            out.append(
                f"| {r.get('probe_client', 'librdkafka')} | **{f(r.get('cpu_ms_per_s'), 2)}** | "
                f"{f(r.get('librdkafka_cpu_ms_per_s'), 2)} | "
                f"{f(r.get('own_cpu_ms_per_s'), 2)} | {r.get('threads')} | "
                f"{r.get('librdkafka_clients')} | {f(r.get('rss_kb'), 0, 1024)} | {la(r)} | "
                f"{cmd(r.get('command'))} |"
            )
        out.append("")
    out += ["## 11. Metadata polls on the probe's producer vs a client of their own", ""]
    if not poll:
        return out + ["Not run yet: `bench/run-all --parts poll`.", ""]
    out += [
        "`bench/poll-latency/poll_latency.py` on the three-broker lab: a producer like the "
        "probe's (acks=all, idempotent, one message per partition every 20 ms) on topic "
        f"`poll-latency` (assignment `{poll.get('assignment')}`, `min.insync.replicas=2`: "
        "broker 1 follows both partitions), and two pollers asking for the topic's metadata "
        "every 100 ms with `rd_kafka_metadata` (`list_topics`, 1 s timeout like kfaild's "
        "poller), one on that producer's handle, one on a client of its own. After 10 s `lab kill "
        "1`; 25 s later the run ends. "
        "'After the fault' = polls started within 20 s after the kill.",
        "",
        "| poller | median ms before | max ms before | median ms after the kill | max ms after "
        "the kill | polls after | failed (1 s timeout) | longest without an answer ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for client, label in (
        ("shared", "on the producer's handle"),
        ("own", "own client (kfaild's layout)"),
    ):
        c = poll.get(client) or {}
        out.append(
            f"| {label} | {f(c.get('before_fault_median_ms'), 1)} | "
            f"{f(c.get('before_fault_max_ms'), 1)} | {f(c.get('after_fault_median_ms'), 1)} | "
            f"{f(c.get('after_fault_max_ms'), 1)} | {c.get('polls_after_fault')} | "
            f"{c.get('failed_after_fault', '–')} | **{f(c.get('longest_without_answer_ms'), 0)}** |"
        )
    out += [
        "",
        f"Load avg at the kill {la(poll, 'load_at_kill')}. Command: {cmd(poll.get('command'))}",
        "",
    ]
    return out


def knobs_section(d):
    out = ["## 12. Batching in the probe's clients: what it would save, and what it would cost", ""]
    if not d:
        return out + ["Not run yet: `bench/run-all --parts knobs`.", ""]
    out += [
        "kfaild alone on the one-broker lab (nothing else probing), 20 ms interval, the "
        "variants run in turn. `default` is kfaild as shipped: librdkafka's `linger.ms` 5 "
        "and `fetch.min.bytes` 1, so the broker answers a fetch as soon as any probe "
        "partition has a new message. librdkafka's producer broker thread is woken by the "
        "first message of every partition's batch (`rd_kafka_msgq_may_wakeup`: one wake-up "
        "per partition per tick, each scanning every partition), and the consumer's by "
        "nearly every partition's answer. The variants set, through the cluster's `client:`, "
        "`fetch.min.bytes` 1 MiB with `fetch.wait.max.ms` (the broker holds every fetch that "
        "long, so a tick comes back in one answer, and every receive time is later by up to "
        "that wait) and `linger.ms` 20 (a tick's messages leave in one request, every ack "
        "later by up to 20 ms); `idempotence off` is not a timing trade but a safety one "
        "(librdkafka's "
        "retries could then duplicate or reorder probe messages) and shows what idempotence "
        "costs, which probe.py does not pay. Wake-ups are voluntary context switches of the "
        "threads. "
        "Latencies are means over the window from kfaild's own histograms (`/metrics`, "
        "all partitions).",
        "",
        "| partitions | variant | run | window s | acked ÷ expected | cores (librdkafka / own) | "
        "CPU ms / 1,000 acked | wake-ups/s (librdkafka / own) | ack latency mean ms | end-to-end "
        "latency mean ms | RSS MiB | load avg before |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = {}
    for r in d.get("runs", []):
        if r.get("error"):
            out.append(
                f"| {r['partitions']} | {r['variant']} | {r.get('repeat')} | failed: "
                f"{r['error'][:160]} |" + " |" * 8
            )
            continue
        groups.setdefault((r["partitions"], r["variant"]), []).append(r)
        out.append(
            f"| {r['partitions']} | {r['variant']} | {r.get('repeat')} | {f(r['window_s'])} | "
            f"{f(r['acked_fraction'], 3)} | {f(r['cpu_cores'], 3)} "
            f"({f(r['librdkafka_cores'], 3)} / {f(r['own_cores'], 3)}) | "
            f"{f(r.get('cpu_ms_per_1000_acked'), 1)} | "
            f"{f(r.get('librdkafka_wakeups_per_s'), 0)} / {f(r.get('own_wakeups_per_s'), 0)} | "
            f"{f(r.get('ack_latency_mean_ms'), 1)} | "
            f"{f(r.get('end_to_end_latency_mean_ms'), 1)} | {f(r['rss_kb'], 0, 1024)} | {la(r)} |"
        )
    if groups:
        out += [
            "",
            "Median (range) per size and variant:",
            "",
            "| partitions | variant | runs | cores | CPU ms / 1,000 acked | acked ÷ expected | "
            "ack latency mean ms | end-to-end latency mean ms |",
            "|---|---|---|---|---|---|---|---|",
        ]
        order = _variant_order(d)
        for (n, v), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
            out.append(
                f"| {n} | {v} | {len(rs)} | {rng([r['cpu_cores'] for r in rs], 3)} | "
                f"{rng([r.get('cpu_ms_per_1000_acked') for r in rs])} | "
                f"{rng([r['acked_fraction'] for r in rs], 3)} | "
                f"{rng([r.get('ack_latency_mean_ms') for r in rs])} | "
                f"{rng([r.get('end_to_end_latency_mean_ms') for r in rs])} |"
            )
    invocations = {}
    for r in d.get("runs", []):
        invocations.setdefault(r.get("invocation") or d.get("invocation"), r)
    for inv, r in invocations.items():
        sizes = sorted(
            {
                x["partitions"]
                for x in d["runs"]
                if (x.get("invocation") or d.get("invocation")) == inv
            }
        )
        out += [
            "",
            f"Command (the {', '.join(str(n) for n in sizes)}-partition "
            f"runs): `{inv}`; per run: {cmd(r['command'])} with the variant's `client:` "
            "properties.",
        ]
    return out + [""]


def _variant_order(d):
    """The variants in the order the runs first used them."""
    order = []
    for r in d.get("runs", []):
        if r["variant"] not in order:
            order.append(r["variant"])
    return order


def secured_section(d):
    out = ["## 13. On the secured lab: the wire client beside librdkafka", ""]
    if not d:
        return out + ["Not run yet: `bench/run-all --parts secured`.", ""]
    out += [
        "Two kfailds started together on the secured lab (three brokers, SASL_SSL with "
        "SCRAM-SHA-512 and the lab's CA), one with `probe.client: wire`, one with "
        "`librdkafka`, each on a topic of its own (RF 3, min.insync.replicas 2), 20 ms; one "
        "window measured for both at the same moments. CPU per process from /proc, acked from "
        "each one's API. Wake-ups: voluntary context switches per second of kfaild's own "
        "threads (the wire client's I/O thread among them) and of librdkafka's.",
        "",
        "| partitions | run | window s | load at start | client | CPU ms / 1,000 acked | cores "
        "| acked ÷ expected | own wake-ups/s | librdkafka wake-ups/s | RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d.get("runs", []):
        if "error" in r:
            out.append(f"| {r['partitions']} | {r['repeat']} | failed: {r['error'][:200]} "
                       "|||||||||")  # fmt: skip
            continue
        for c in ("wire", "librdkafka"):
            k = r[c]
            out.append(
                f"| {r['partitions']} | {r['repeat']} | {r['window_s']} | "
                f"{r['load_at_window_start'][0]} | {c} | {f(k['cpu_ms_per_1000_acked'])} | "
                f"{f(k['cpu_cores'], 3)} | {f(k['acked_fraction'], 3)} | "
                f"{f(k['own_wakeups_per_s'], 0)} | {f(k['librdkafka_wakeups_per_s'], 0)} | "
                f"{k['rss_kb'] // 1024} |"
            )
    out += ["", f"Command: `{d.get('invocation', 'bench/run-all --parts secured')}`", ""]
    return out


def main():
    store, probe, peer = load("store"), load("probe"), load("peer")
    drill, res, outage = load("drill"), load("resolution"), load("outage")
    drill_wire = load("drill-wire")
    drill_alone = load("drill-wire-alone")
    drill_settled = load("drill-wire-alone-settled")
    drill_cxx = load("drill-wire-alone-settled-cxx")
    side, idle, poll, knobs = load("side"), load("idle"), load("poll"), load("knobs")
    secured = load("secured")
    latest = next((x for x in (side, store, probe, peer, drill, res, outage) if x), None)
    m = (latest or {}).get("machine") or {}
    lines = [
        "# kfaild benchmark results, every run",
        "",
        "Generated by `bench/report.py` from `bench/results/*.json`, which `bench/run-all` "
        "writes (`bench/run-all --parts PART` reruns one part; `--report-only` only "
        "re-renders). Do not edit by hand: edit `bench/notes.md` for the prose. The current "
        "figures, one line each with its command and commit: docs/PERFORMANCE.md.",
        "",
        f"kfaild measured: {built(latest)} (compiler flags of the project's default build "
        "type, RelWithDebInfo; librdkafka 2.14.2). Each part's commit and flags are in the last "
        "line.",
        "",
        f"Machine: {m.get('cpus', '?')} vCPU ({m.get('cpu', '?')}), {m.get('mem_gb', '?')} GB "
        "RAM. Every figure carries the load average (1/5/15 min) seen before it. The Kafka lab "
        "(4 JVMs) runs on the same vCPUs as the probes it serves.",
        "",
    ]
    notes = BENCH / "notes.md"
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    for section in (
        store_section(store),
        probe_section(probe, peer),
        drill_section(drill),
        drill_section(
            drill_wire,
            "## 5b. The same kill with the wire client and an unlingered probe.py",
            "bench/run-all --parts drill --probe-clients wire --peer-linger-ms 0",
        ),
        drill_section(
            drill_alone,
            "## 5c. The same kill, the wire client and an unlingered "
            "probe.py alone (no Kafka tools beside them)",
            "bench/run-all --parts drill --probe-clients wire --peer-linger-ms 0 "
            "--drill-without-tools",
        ),
        drill_section(
            drill_settled,
            "## 5d. The same kill, the two probes alone, each kill "
            "once the machine's load has settled",
            "bench/run-all --parts drill --drills 5 --probe-clients wire "
            "--peer-linger-ms 0 --drill-without-tools --drill-settle-load 2.5",
        ),
        drill_section(
            drill_cxx,
            "## 5e. The same kill against the article's method in C++, "
            "the two probes alone, each kill once the load has settled",
            "bench/run-all --parts drill --drills 5 --probe-clients wire "
            "--peer-linger-ms 0 --drill-without-tools --drill-settle-load 2.5 "
            "--peer-impl cxx",
        ),
        resolution_section(res),
        growth_section(store, probe, peer),
        outage_section(outage),
        side_section(side),
        idle_section(idle, poll),
        knobs_section(knobs),
        secured_section(secured),
    ):
        lines += section
    stamps = [
        f"{x['part']}: {x['generated']} ({built(x)})"
        for x in (
            store,
            probe,
            peer,
            drill,
            drill_wire,
            drill_alone,
            drill_settled,
            drill_cxx,
            res,
            outage,
            side,
            idle,
            poll,
            knobs,
            secured,
        )
        if x
    ]
    lines += ["---", "", "Results generated: " + "; ".join(stamps) + "."]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
