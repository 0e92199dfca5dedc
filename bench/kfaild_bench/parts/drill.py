"""drill and drill-reanalyse: kill drills of broker 1 seen at once by kfaild, the article's
probe, and Kafka's EndToEndLatency and ProducerPerformance."""

import json
import signal
import subprocess
import time
from pathlib import Path

from ..common import LineTimer, fresh_db, load, now_us, say, sh, stop
from ..kfaild import kfaild_config, kfaild_phases, kfaild_sending, kfaild_stalls
from ..lab import (
    create_topic,
    ensure_venv,
    java_tool,
    kill_time_us,
    lab,
    lab_up,
    preferred_election,
)
from ..peer import peer_cmd
from ..results import save
from ..stats import e2e_summary, perf_summary

TOPIC = "orders"
ASSIGNMENT = "1:2:3,2:3:1,3:1:2"


def agreement(peer_gaps, stalls, topic):
    """Per partition of probe.py's stalls (gaps.py --json) and kind: kfaild's stall of the same
    partition and kind beside it, and kfaild − probe.py (µs; None where either is missing)."""
    out = []
    for e in peer_gaps:
        for kind in ("ack", "receive"):
            k = stalls.get(f"{topic}[{e['partition']}] {kind}")
            py = e[kind]["stall_us"]
            out.append(
                {
                    "partition": e["partition"],
                    "kind": kind,
                    "kfaild_us": k and k["duration_us"],
                    "peer_us": py,
                    "diff_us": None if (k is None or py is None) else k["duration_us"] - py,
                }
            )
    return out


def peer_gaps(s, csv_path, fault_us, window_s):
    """gaps.py --json on the peer's CSV: each partition's stall around the fault."""
    return json.loads(
        subprocess.run(
            [str(s.py), str(s.bench / "peer-probe/gaps.py"), str(csv_path),
             "--fault-us", str(fault_us), "--window", str(window_s), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )  # fmt: skip


def drill_commands(s, cfg, csv_path, peer_linger_ms):
    b = s.bootstrap
    return {
        "kfaild": [s.build / "server/kfaild", "--config", cfg],
        "peer": [
            *peer_cmd(s), "--bootstrap", b, "--topic", TOPIC, "--warmup", 0, "--csv", csv_path,
            *(["--linger-ms", peer_linger_ms] if peer_linger_ms is not None else []),
        ],
        "e2e": java_tool(
            s, "org.apache.kafka.tools.EndToEndLatency", "--bootstrap-server", b,
            "--topic", "e2e-k1", "--num-records", 10_000_000, "--producer-acks", "all",
            "--record-size", 64,
        ),
        "perf": java_tool(
            s, "org.apache.kafka.tools.ProducerPerformance", "--topic", "perf-k1",
            "--num-records", 10_000_000, "--record-size", 64, "--throughput", 50,
            "--producer-props", "acks=all", f"bootstrap.servers={b}",
        ),
    }  # fmt: skip


def one_drill(s, i, warmup, after_kill, probe_client=None, peer_linger_ms=None, with_tools=True,
              settle_load=None):  # fmt: skip
    db = s.work / f"drill-{i}.db"
    fresh_db(db)
    cfg = s.work / "drill.yaml"
    kfaild_config(s, cfg, db, TOPIC, 3, assignment=ASSIGNMENT, probe_client=probe_client)
    csv_path = s.work / f"drill-{i}-peer.csv"
    create_topic(s, TOPIC, ASSIGNMENT)
    create_topic(s, "e2e-k1", "1:2:3")
    create_topic(s, "perf-k1", "1:2:3")
    preferred_election(s)
    cmds = drill_commands(s, cfg, csv_path, peer_linger_ms)
    if not with_tools:
        # The two probes alone: two JVMs fewer on the cores the brokers and probes share.
        del cmds["e2e"], cmds["perf"]
    procs, timers = {}, {}
    before = load()
    for name, cmd in cmds.items():
        say("$", sh(cmd))
        procs[name] = subprocess.Popen(
            [str(c) for c in cmd],
            stdout=subprocess.PIPE,
            stderr=open(s.work / f"drill-{i}-{name}.err", "w"),
            text=True,
        )
        timers[name] = LineTimer(procs[name], s.work / f"drill-{i}-{name}.out")
    try:
        time.sleep(warmup)
        settle_deadline = time.time() + 180
        while settle_load is not None and load()[0] > settle_load and time.time() < settle_deadline:
            time.sleep(5)
        load_at_kill = load()
        requested_us = now_us()
        kill = lab(s, "kill", "1")
        fault_us = kill_time_us(kill.stdout, requested_us)
        say("killed broker 1:", kill.stdout.strip())
        time.sleep(after_kill)
        # Four JVMs on two busy cores: a broker can take minutes to come back.
        started = lab(s, "start", "1", "--wait", "--timeout", "400", check=False)
        restarted_us = now_us()
        restart_error = started.stderr.strip() if started.returncode != 0 else ""
        time.sleep(10)
    finally:
        for name in ("e2e", "perf"):
            if name in procs:
                stop(procs[name])
        stop(procs["peer"], signal.SIGINT)
        stop(procs["kfaild"])
    until = fault_us + after_kill * 1_000_000
    gaps = peer_gaps(s, csv_path, fault_us, after_kill)
    kf = kfaild_stalls(db, fault_us, until)
    kf_sending = kfaild_sending(s, db, TOPIC, fault_us)
    return {
        "fault_us": fault_us,
        "lab_kill_output": kill.stdout.strip(),
        "restarted_us": restarted_us,
        "restart_error": restart_error,
        "load_before": before,
        "load_at_kill": load_at_kill,
        "load_after": load(),
        "commands": {k: sh(v) for k, v in cmds.items()},
        "kfaild": kf,
        "kfaild_sending": kf_sending,
        "peer": gaps,
        "agreement": agreement(gaps, kf, TOPIC),
        "kfaild_phases": kfaild_phases(db, fault_us, until),
        "e2e": e2e_summary(timers["e2e"].lines, fault_us) if "e2e" in timers else None,
        "perf": perf_summary(timers["perf"].lines, fault_us) if "perf" in timers else None,
    }


def drill_result_name(s, args):
    """drill (librdkafka) or drill-<client>, then -alone, -settled and -cxx as the run was."""
    client = args.probe_clients[0]
    return (
        ("drill" if client == "librdkafka" else f"drill-{client}")
        + ("-alone" if args.drill_without_tools else "")
        + ("-settled" if args.drill_settle_load is not None else "")
        + s.peer_suffix()
    )


def part_drill(s, args):
    """kfaild's librdkafka client (the application view, section 4-5) writes drill.json; the
    wire client writes drill-wire.json (section 5b), so neither run replaces the other."""
    lab_up(s)
    ensure_venv(s)
    s.work.mkdir(parents=True, exist_ok=True)
    client = args.probe_clients[0]
    out = {"drills": [], "invocation": s.invocation}
    with_tools = not args.drill_without_tools
    name = drill_result_name(s, args)
    for i in range(1 if args.quick else args.drills):
        drill = one_drill(
            s,
            i,
            warmup=20,
            after_kill=30,
            probe_client=client,
            peer_linger_ms=args.peer_linger_ms,
            with_tools=with_tools,
            settle_load=args.drill_settle_load,
        )
        out["drills"].append(
            {
                **drill,
                "settle_load": args.drill_settle_load,
                "kfaild_client": client,
                "peer_linger_ms": args.peer_linger_ms,
                "peer_impl": s.peer_impl,
                "with_tools": with_tools,
            }
        )
        save(s, name, out)
        lab(s, "wait", "--timeout", "400", check=False)


def read_lines(path):
    """A LineTimer's copy: (arrival µs, line) per `<µs>\\t<line>` line; [] when it is missing."""
    out = []
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            t, _, text = line.partition("\t")
            out.append((int(t), text))
    return out


def part_drill_reanalyse(s, args):
    """Recomputes the tools' summaries of the recorded drills from the files they left in WORK
    (drill-N-e2e.out, drill-N-perf.out: each line with its arrival time), and whether each probe
    kept sending up to the kill (kfaild's samples, probe.py's CSV), for the result the same
    --probe-clients and --drill-without-tools name. WORK holds the files of the last drill run
    only: a drill whose files do not cover its kill is left as it is."""
    name = drill_result_name(s, args)
    p = s.results / f"{name}.json"
    d = json.loads(p.read_text())
    for i, dr in enumerate(d["drills"]):
        fault = dr["fault_us"]
        db, csv_path = s.work / f"drill-{i}.db", s.work / f"drill-{i}-peer.csv"
        if db.exists() and csv_path.exists():
            sending = kfaild_sending(s, db, TOPIC, fault)
            peer = peer_gaps(s, csv_path, fault, 30)
            covered = any(v is not None for v in sending.values()) and any(
                e.get("sending") is not None for e in peer
            )
            if covered:
                dr["kfaild_sending"] = sending
                by_partition = {e["partition"]: e for e in peer}
                for e in dr["peer"]:
                    if e["partition"] in by_partition:
                        e["sending"] = by_partition[e["partition"]]["sending"]
            say(
                f"drill {i}: "
                f"{'sending added' if covered else 'WORK files are of another run; left'}"
            )
        e2e = read_lines(s.work / f"drill-{i}-e2e.out")
        perf = read_lines(s.work / f"drill-{i}-perf.out")
        if e2e:
            dr["e2e"] = e2e_summary(e2e, fault)
        if perf:
            dr["perf"] = perf_summary(perf, fault)
        db = s.work / f"drill-{i}.db"
        if db.exists():
            dr["kfaild_phases"] = kfaild_phases(db, fault, fault + 30_000_000)
    save(s, name, {k: v for k, v in d.items() if k not in ("part", "generated", "machine")})
