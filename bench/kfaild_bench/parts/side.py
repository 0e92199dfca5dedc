"""side (peers): kfaild, the article's probe, KMinion and EndToEndLatency at the same time on the
one-broker lab, each on its own topic, one window measured for all at the same moments."""

import http.client
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from ..build import ensure_built
from ..common import (
    LineTimer,
    fresh_db,
    load,
    now_us,
    port_taken,
    proc_cpu_rss,
    sample_proc,
    say,
    sh,
    stop,
)
from ..kfaild import KfaildApi, kfaild_config, probe_counters, probe_partitions, wait_http_port
from ..kminion import KMINION_PORT, kminion_binary, kminion_config, kminion_counters
from ..lab import delete_topic, ensure_venv, java_tool, lab1_up, lab_pids
from ..peer import nearest_status, peer_cmd
from ..results import merge_runs, previous, save
from ..stats import PROGRESS_RE, latency_stats, median


def side_commands(s, n, rep, cfg, kminion_cfg, kminion, topic_p, peer_linger_ms):
    return {
        "kfaild": [s.build / "server/kfaild", "--config", cfg],
        "peer": [
            *peer_cmd(s), "--bootstrap", s.bootstrap1, "--topic", topic_p,
            "--create-partitions", n, "--replication-factor", 1, "--min-insync", 1,
            "--warmup", 0, "--status-every", 0.5, "--csv", s.work / f"side-{n}-{rep}-peer.csv",
            *(["--linger-ms", peer_linger_ms] if peer_linger_ms is not None else []),
        ],
        "e2e": java_tool(
            s, "org.apache.kafka.tools.EndToEndLatency", "--bootstrap-server",
            # It keeps an array of every latency (8 bytes per record) in its
            # 256 MiB heap; 1M records outlast any window at ~1-3 ms each.
            s.bootstrap1, "--topic", "side-e2e", "--num-records", 1_000_000,
            "--producer-acks", "all", "--record-size", 64,
        ),
        # env -i: KMinion reads every environment variable as a configuration key.
        "kminion": ["env", "-i", f"CONFIG_FILEPATH={kminion_cfg}", kminion],
    }  # fmt: skip


def side_run(s, n, rep, warmup, duration, kminion, probe_client="librdkafka",
             peer_linger_ms=None, with_e2e=True, settle_load=None, probe_extra=None):  # fmt: skip
    """kfaild (the binary), probe.py, KMinion (its end-to-end probe) and EndToEndLatency started
    together on the one-broker lab, each on its own topic; one window measured for all of them at
    the same moments. Without `with_e2e`, the three probes of issue 29 only: EndToEndLatency sends
    as fast as its broker answers, and beside it the one-broker lab fell behind every probe."""
    topic_k, topic_p, topic_m = f"side-kfaild-p{n}", f"side-peer-p{n}", f"side-kminion-p{n}"
    db, cfg = s.work / f"side-{n}.db", s.work / f"side-{n}.yaml"
    kminion_cfg = s.work / f"side-{n}-kminion.yaml"
    log_path = s.work / f"side-{n}-{rep}-kfaild.log"
    kminion_log = s.work / f"side-{n}-{rep}-kminion.log"
    fresh_db(db)
    kfaild_config(s, cfg, db, topic_k, n, http_port=0, one_broker=True,
                  probe_client=probe_client, probe_extra=probe_extra)  # fmt: skip
    kminion_config(s, kminion_cfg, topic_m, n)
    cmds = side_commands(s, n, rep, cfg, kminion_cfg, kminion, topic_p, peer_linger_ms)
    if not with_e2e:
        del cmds["e2e"]
    rec = {
        "partitions": n,
        "repeat": rep,
        "commands": {k: sh(v) for k, v in cmds.items()},
        "kminion_config": kminion_cfg.read_text(),
        "load_before": load(),
        "kfaild_log": str(log_path),
        "kminion_log": str(kminion_log),
    }
    procs, timers, win = {}, {}, None
    log = open(log_path, "w")
    try:
        if port_taken(KMINION_PORT):
            raise RuntimeError(f"port {KMINION_PORT}, KMinion's, is taken (a KMinion left over?)")
        for name, cmd in cmds.items():
            say("$", sh(cmd))
            if name == "kfaild":
                procs[name] = subprocess.Popen(
                    [str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT
                )
            elif name == "kminion":
                procs[name] = subprocess.Popen(
                    [str(c) for c in cmd], stdout=open(kminion_log, "w"), stderr=subprocess.STDOUT
                )
            else:
                procs[name] = subprocess.Popen(
                    [str(c) for c in cmd],
                    stdout=subprocess.PIPE,
                    text=True,
                    stderr=open(s.work / f"side-{n}-{rep}-{name}.err", "w"),
                )
                timers[name] = LineTimer(procs[name])
        api = KfaildApi(wait_http_port(procs["kfaild"], log_path, 120))
        t0 = time.monotonic()
        while True:
            parts = probe_partitions(api.get(), topic_k)
            peer = nearest_status(timers["peer"], now_us())
            try:
                kminion_acked = kminion_counters()["acked"]
            except (OSError, http.client.HTTPException):
                kminion_acked = {}  # its HTTP server starts once its probe has
            if (
                len(parts) == n
                and all((p.get("acked") or 0) > 0 for p in parts.values())
                and peer
                and peer["acked"] > 0
                and len(kminion_acked) == n
                and all(kminion_acked.values())
            ):
                break
            for name, p in procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) before probing")
            if time.monotonic() - t0 > 300:
                raise RuntimeError("kfaild, probe.py and KMinion not all probing within 300 s")
            time.sleep(0.5)
        rec["setup_s"] = round(time.monotonic() - t0, 1)
        time.sleep(warmup)
        # With settle_load: the window waits (at most 180 s more) until the 1-minute load is at
        # most that, so that it measures the probes running, not the start of three of them
        # (topics of N partitions created, JITs and Go's runtime warming); the load at its start
        # is kept.
        settle_deadline = time.monotonic() + 180
        while (
            settle_load is not None
            and load()[0] > settle_load
            and time.monotonic() < settle_deadline
        ):
            time.sleep(5)
        rec["settle_load"] = settle_load
        rec["settle_waited_s"] = round(time.monotonic() - t0 - rec["setup_s"] - warmup, 1)
        lab_pid_list = lab_pids(s, s.lab1_env)

        def moment():
            t = now_us()
            m = {
                "t_us": t,
                "kfaild": {
                    **sample_proc(procs["kfaild"].pid),
                    **probe_counters(probe_partitions(api.get(), topic_k)),
                },
                "peer": {
                    **sample_proc(procs["peer"].pid),
                    "status": nearest_status(timers["peer"], t),
                },
                **(
                    {
                        "e2e": {
                            **sample_proc(procs["e2e"].pid),
                            "progress_lines": sum(
                                1
                                for _, line in list(timers["e2e"].lines)
                                if PROGRESS_RE.match(line)
                            ),
                        }
                    }
                    if "e2e" in procs
                    else {}
                ),
                "kminion": {
                    **sample_proc(procs["kminion"].pid),
                    **{k: sum(v.values()) for k, v in kminion_counters().items()},
                },
                "lab_cpu_s": sum(
                    proc_cpu_rss(pid)[0] for pid in lab_pid_list if Path(f"/proc/{pid}").exists()
                ),
                "load": load(),
            }
            m["kfaild"]["t_us"] = now_us()
            return m

        a = moment()
        time.sleep(duration)
        b = moment()
        rec.update(window(n, a, b, timers["e2e"].lines if "e2e" in timers else []))
        win = (a["t_us"], b["t_us"])
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        rec["error"] = str(e)[-2000:]
        say("failed:", rec["error"])
    finally:
        for name in ("kminion", "e2e", "peer", "kfaild"):
            if name in procs:
                stop(procs[name], signal.SIGINT if name in ("peer", "kminion") else signal.SIGTERM)
        log.close()
        csv = s.work / f"side-{n}-{rep}-peer.csv"
        if win:
            try:
                rec["timing"] = ack_latencies(db, topic_k, csv, win)
            except (OSError, ValueError, sqlite3.Error) as e:
                rec["timing"] = {"error": str(e)}
        csv.unlink(missing_ok=True)
        fresh_db(db)
    rec["load_after"] = load()
    return rec


def peer_acks(lines, win):
    """(send µs, ack µs) of the peer's CSV lines (after its header) whose message was acked
    without error and sent in the window [win[0], win[1])."""
    out = []
    for line in lines:
        parts = line.rstrip("\n").split(",")
        if len(parts) < 5 or not parts[2] or not parts[3] or parts[4] not in ("", "0", "None"):
            continue
        send, ack = int(parts[2]), int(parts[3])
        if win[0] <= send < win[1]:
            out.append((send, ack))
    return out


def ack_latencies(db, topic, csv, win):
    """Send → ack latency of the messages kfaild and probe.py sent in the window, side by side on
    the same broker (stats.latency_stats). The timing check of issue 29: a client of kfaild's own
    must not make acks look faster or slower than the article's client does.

    Per tick too: kfaild's wire client sends a tick as one Produce request per broker, so its
    first and last ack are close; librdkafka sends one Produce request per partition, which the
    broker answers one after the other on a connection, so the article-method peer's acks of one
    tick spread over that queue. Its first ack of a tick is the one whose request waited behind
    none of its own."""
    from sample_blocks import samples

    # The probe topic's samples only: the commit and control probes keep theirs in the same
    # tables, under the names `kfaild:commit` and `kfaild:control`.
    k = [
        (x["send_us"], x["ack_us"])
        for x in samples(db, since_us=win[0], until_us=win[1])
        if x["topic"] == topic and x["ack_us"] and not x["ack_error"]
    ]
    p = []
    if csv.exists():
        with open(csv) as f:
            next(f, None)
            p = peer_acks(f, win)
    return {"kfaild": latency_stats(k), "peer": latency_stats(p)}


def cpu_part(x, y, s):
    """A process's CPU, RSS and wake-ups between two sample_proc() moments s seconds apart."""
    return {
        "cpu_s": y["cpu_s"] - x["cpu_s"],
        "cpu_cores": (y["cpu_s"] - x["cpu_s"]) / s,
        "librdkafka_cpu_s": y["librdkafka_cpu_s"] - x["librdkafka_cpu_s"],
        "own_cpu_s": y["own_cpu_s"] - x["own_cpu_s"],
        "rss_kb": y["rss_kb"],
        "librdkafka_wakeups_per_s": (y["librdkafka_wakeups"] - x["librdkafka_wakeups"]) / s,
        "own_wakeups_per_s": (y["own_wakeups"] - x["own_wakeups"]) / s,
        "threads": y["threads"],
        "librdkafka_clients": y["librdkafka_clients"],
    }


def window(n, a, b, e2e_lines):
    """Per process, what it did between the two moments."""
    secs = (b["t_us"] - a["t_us"]) / 1e6
    expected = n * secs * 1000 / 20
    out = {
        "window_s": round(secs, 2),
        "expected_per_probe": expected,
        "load_at_window_start": a["load"],
        "load_at_window_end": b["load"],
        "lab_cpu_cores": (b["lab_cpu_s"] - a["lab_cpu_s"]) / secs,
    }
    k = cpu_part(a["kfaild"], b["kfaild"], secs)
    k["acked"] = b["kfaild"]["acked"] - a["kfaild"]["acked"]
    # What kfaild's probe did besides acking: a tick it held back (too much outstanding on a
    # partition, probe.max_outstanding_ms) sends nothing, so it is missing from acked too.
    for key in ("sent", "send_failed", "held_ticks", "lost"):
        if key in a["kfaild"] and key in b["kfaild"]:
            k[key] = b["kfaild"][key] - a["kfaild"][key]
    k["acked_fraction"] = k["acked"] / expected
    k["cpu_ms_per_1000_acked"] = k["cpu_s"] * 1e6 / k["acked"] if k["acked"] else None
    out["kfaild"] = k
    sa, sb = a["peer"]["status"], b["peer"]["status"]
    if sa and sb and sb["t_us"] > sa["t_us"]:
        ps = (sb["t_us"] - sa["t_us"]) / 1e6
        p = cpu_part(a["peer"], b["peer"], secs)
        # The probe's own counters and getrusage at the same moment (its status lines).
        p.update(
            {
                "status_window_s": ps,
                "acked": sb["acked"] - sa["acked"],
                "cpu_s_own_clock": sb["cpu_s"] - sa["cpu_s"],
                "skipped_ticks": sb["skipped"] - sa["skipped"],
            }
        )
        p["acked_fraction"] = p["acked"] / (n * ps * 1000 / 20)
        p["cpu_ms_per_1000_acked"] = p["cpu_s_own_clock"] * 1e6 / p["acked"] if p["acked"] else None
        out["peer"] = p
    if "e2e" in a:
        e = cpu_part(a["e2e"], b["e2e"], secs)
        lat = [
            float(line.split("\t")[1])
            for t, line in list(e2e_lines)
            if a["t_us"] <= t <= b["t_us"] and PROGRESS_RE.match(line)
        ]
        e.update(
            {
                "messages_approx": (b["e2e"]["progress_lines"] - a["e2e"]["progress_lines"]) * 1000,
                "latency_ms_printed_median": median(lat),
                "latency_ms_printed_max": max(lat or [0]),
                "latencies_printed": len(lat),
            }
        )
        out["e2e"] = e
    m = cpu_part(a["kminion"], b["kminion"], secs)
    m.update(
        {k: b["kminion"][k] - a["kminion"][k] for k in ("acked", "failed", "received", "lost")}
    )
    m["acked_fraction"] = m["acked"] / expected
    m["cpu_ms_per_1000_acked"] = m["cpu_s"] * 1e6 / m["acked"] if m["acked"] else None
    out["kminion"] = m
    kc, pc = k.get("cpu_ms_per_1000_acked"), out.get("peer", {}).get("cpu_ms_per_1000_acked")
    mc = m["cpu_ms_per_1000_acked"]
    out["ratio_peer_over_kfaild"] = pc / kc if kc and pc else None
    out["ratio_kminion_over_kfaild"] = mc / kc if kc and mc else None
    return out


def side_key(s, args, n, probe_client, rep):
    """A side run's key in side.json: size, client and what was different about the run."""
    linger = "" if args.peer_linger_ms is None else f"-linger{args.peer_linger_ms:g}"
    alone = "-no-e2e" if args.side_without_e2e else ""
    settled = "" if args.side_settle_load is None else "-settled"
    extra = "".join(f"-{k}{v}" for k, v in args.side_probe.items())
    return f"{n:05d}-{probe_client}{linger}{alone}{settled}{extra}{s.peer_suffix()}-{rep}"


def part_side(s, args):
    ensure_built(s, "kfaild")
    kminion, kminion_commit = kminion_binary(s)
    lab1_up(s)
    ensure_venv(s)
    s.work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        java_tool(s, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", s.bootstrap1,
                  "--create", "--if-not-exists", "--topic", "side-e2e", "--partitions", 1,
                  "--replication-factor", 1),
        check=True,
        capture_output=True,
    )  # fmt: skip
    warmup, duration = (10, 20) if args.quick else (15, 45)
    repeats = 1 if args.quick else args.repeats
    kept = previous(s, "side", "key")
    runs = []
    for n in args.sizes:
        for probe_client in args.probe_clients:
            for rep in range(repeats):
                r = side_run(
                    s,
                    n,
                    rep,
                    warmup,
                    duration,
                    kminion,
                    probe_client,
                    args.peer_linger_ms,
                    with_e2e=not args.side_without_e2e,
                    settle_load=args.side_settle_load,
                    probe_extra=args.side_probe,
                )
                r["key"] = side_key(s, args, n, probe_client, rep)
                r["kfaild_probe"] = args.side_probe
                r["peer_impl"] = s.peer_impl
                r["with_e2e"] = not args.side_without_e2e
                r["kfaild_client"] = probe_client
                r["peer_linger_ms"] = args.peer_linger_ms
                r["kminion_commit"] = kminion_commit
                runs.append(r)
                save(
                    s,
                    "side",
                    {
                        "load_source": "one-broker lab (KFAILD_LAB_BROKERS=1), RF 1",
                        "bootstrap": s.bootstrap1,
                        "interval_ms": 20,
                        "invocation": s.invocation,
                        "runs": merge_runs(kept, runs, "key"),
                    },
                )
        if n >= 1000:
            for t in (f"side-kfaild-p{n}", f"side-peer-p{n}", f"side-kminion-p{n}"):
                delete_topic(s, t, s.bootstrap1)
