r"""Runs kfaild's benchmarks and renders every run's tables into bench/results/report.md.

    bench/run-all [--parts store,probe,peer,drill,resolution,outage] [--quick] [--report-only]
    bench/run-all --parts probe,peer --sizes 100      # rerun one size, keep the others
    bench/run-all --parts outage --outages 10         # one outage length, keep the others

Each part writes bench/results/<part>.json (every figure with the command that produced it and the
load average around it) and can be rerun alone; bench/report.py then renders
bench/results/report.md from whatever results exist. A figure that changes is copied by hand, with
its command and commit, into docs/PERFORMANCE.md (the current figures). Parts:

  store       store_bench: sustained inserts through the batch writer (3 fresh databases); the
              writer at the probe's own rates (3/100/1,000 partitions × 50 samples/s); one
              database grown to 1M, 10M and 100M samples with query latencies at each size
              (--store-steps insert,paced,growth; --store-sizes; --store-big-mode)
  probe       probe_bench (kfaild's probe path in-process) at 3, 100 and 1,000 partitions,
              and the kfaild binary itself at the same sizes, CPU from /proc
  peer        bench/peer-probe/probe.py (the article's method, confluent-kafka) at 3, 100, 1,000
  drill       kill drills of broker 1 observed at once by kfaild, probe.py, Kafka's
              EndToEndLatency and ProducerPerformance; kfaild with the first of --probe-clients:
              librdkafka writes drill.json, wire drill-wire.json; --drill-without-tools: the
              two probes alone (drill-<client>-alone.json); --drill-settle-load L: each kill
              waits for the 1-minute load average to fall to L (at most 180 s), into
              drill-<client>[-alone]-settled.json
  resolution  the smallest interval each probe sustains on 100 partitions
  outage      per length in --outages (default 10,60,300 s): the kfaild binary probing a fresh
              3-partition topic (1:2:3,2:3:1,3:1:2, min.insync.replicas 2) at 20 ms, steady for
              10 s; `lab kill` 1, 2, 3 for that long; `lab up`, then its API polled every 100 ms:
              when kfaild's metadata shows every partition writable (leader, ISR >= 2), when
              acks resume (every partition's current ack gap < 1 s), when the probe is steady
              again (the drill guards' probe checks), held ticks, failed sends, the longest ack
              gap. Builds kfaild in the default BUILD if it is missing
  drill-reanalyse  recomputes the drill summaries from the files the drills left in WORK
  side, peers issue 18: kfaild (binary), probe.py, KMinion's end-to-end probe and EndToEndLatency
              at the same time on the one-broker lab, each on its own topic; CPU per 1,000 acked
              per process from one window, --repeats runs per size (--sizes). KMinion is the
              one built here from KFAILD_KMINION_SRC, or the operator's (KFAILD_KMINION,
              KFAILD_KMINION_COMMIT); kfaild with each
              --probe-clients in turn (default wire); --side-without-e2e: the three probes of
              issue 29 only, without EndToEndLatency
  idle        kfaild's CPU per second with its probe at the lowest rate (1 partition, 60 s)
  poll        metadata poll latency on a probe producer's handle vs a client of its own while a
              follower is killed (bench/poll-latency/poll_latency.py; three-broker lab)
  knobs       kfaild alone on the one-broker lab at each --sizes >= 100, as shipped and with
              batching in its clients (fetches held 10 / 20 ms, linger.ms 20): CPU, librdkafka
              wake-ups, acked, ack and end-to-end latency means from kfaild's /metrics;
              --repeats rounds of every variant
  secured     the wire probe client and the librdkafka one side by side on the secured lab
              (SASL_SSL, SCRAM-SHA-512; three brokers, KFAILD_BENCH_SECURED_PORT_BASE, default
              29400, state KFAILD_BENCH_SECURED_DIR, default /tmp/bench-lab-secured), one kfaild
              each on its own topic at each --sizes, --repeats runs, one window of
              --secured-window-s (default 60) each: CPU per 1,000 acked per process

The issue-18 set, ~60 min on a quiet machine:
    bench/run-all --parts probe,peer,side,idle,poll,resolution --kfaild-intervals 20,5,1 \
        --peer-intervals 20,5
    bench/run-all --parts knobs --sizes 100 --repeats 3 --lab-down

Needs: the build (KFAILD_BENCH_BUILD, default /tmp/kfaild-bench-build) with targets kfaild,
store_bench and probe_bench, built here into the default BUILD when missing; the bench labs
(started here if down: three brokers on ports 29091-29093/29100, state /tmp/bench-lab; one broker
on 29291/29300, state /tmp/bench-lab-1b, for probe, side, idle, resolution); a venv with
confluent-kafka (KFAILD_BENCH_VENV, default ~/.cache/kfaild/venv, created by --setup; not for
outage); for side, KMinion (https://github.com/redpanda-data/kminion), built here from a git
checkout of it (KFAILD_KMINION_SRC; `go build` with its modules from the Go proxy, cached per
commit in KFAILD_CACHE) or by the operator (KFAILD_KMINION, its path; KFAILD_KMINION_COMMIT, its
commit). Scratch files go to KFAILD_BENCH_WORK (default /tmp/kfaild-bench-work).
KFAILD_BENCH_RESULTS (default bench/results) moves the results elsewhere, for a trial run, and
the report with them (RESULTS/report.md).
"""

import argparse
import os
import subprocess
import sys

from .common import say
from .lab import ensure_venv, lab
from .parts.drill import part_drill, part_drill_reanalyse
from .parts.idle import part_idle
from .parts.knobs import part_knobs
from .parts.outage import part_outage
from .parts.poll import part_poll
from .parts.probe import part_peer, part_probe, part_resolution
from .parts.secured import part_secured
from .parts.side import part_side
from .parts.store import part_store
from .settings import Settings

PARTS = {
    "store": part_store,
    "probe": part_probe,
    "peer": part_peer,
    "drill": part_drill,
    "resolution": part_resolution,
    "outage": part_outage,
    "drill-reanalyse": part_drill_reanalyse,
    "side": part_side,
    "peers": part_side,
    "idle": part_idle,
    "knobs": part_knobs,
    "poll": part_poll,
    "secured": part_secured,
}


def parser():
    ap = argparse.ArgumentParser(
        description="kfaild benchmarks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument(
        "--parts",
        default="store,probe,peer,drill,resolution,outage",
        help="comma-separated: store, probe, peer, drill, resolution, outage, side, "
        "idle, knobs, poll; drill-reanalyse recomputes the drill part from its "
        "saved files",
    )
    ap.add_argument("--sizes", default="3,100,1000", help="partition counts for probe and peer")
    ap.add_argument("--drills", type=int, default=3)
    ap.add_argument(
        "--secured-window-s",
        type=float,
        default=60,
        help="secured part: the measured window, seconds (after 10 s of warm-up)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="side and knobs parts: runs per size")
    ap.add_argument(
        "--probe-clients",
        default="wire",
        help="side (peers) and idle parts: kfaild's probe.client in turn, "
        "comma-separated (wire, librdkafka); the drill part takes the first",
    )
    ap.add_argument(
        "--peer-linger-ms",
        type=float,
        default=None,
        help="side (peers) part: probe.py's linger.ms (librdkafka's 5 when not given); "
        "0 for the timing check against kfaild's wire client, which does not linger",
    )
    ap.add_argument(
        "--peer-impl",
        choices=["python", "cxx"],
        default="python",
        help="peer, side (peers) and drill parts: the article-method peer, probe.py "
        "(python) or its C++ port bench/peer-probe/refprobe.cc (cxx: the same "
        "method without an interpreter in its timestamps); cxx results' names "
        "and keys end in -cxx",
    )
    ap.add_argument(
        "--drill-without-tools",
        action="store_true",
        help="drill part: kfaild and probe.py alone, without Kafka's EndToEndLatency "
        "and ProducerPerformance beside them; writes drill-<client>-alone.json",
    )
    ap.add_argument(
        "--drill-settle-load",
        type=float,
        default=None,
        help="drill part: before each kill, wait (at most 180 s) until the 1-minute "
        "load average is at most this, so that a broker restarted by the last "
        "drill has finished starting; the load at the kill is reported either way; "
        "the result's name ends in -settled",
    )
    ap.add_argument(
        "--side-without-e2e",
        action="store_true",
        help="side (peers) part: the three probes of issue 29 only (kfaild, probe.py, "
        "KMinion), without EndToEndLatency beside them",
    )
    ap.add_argument(
        "--side-settle-load",
        type=float,
        default=None,
        help="side (peers) part: after the warm-up, the window waits (at most 180 s) "
        "until the 1-minute load average is at most this; the load at the "
        "window's start is reported either way, and the wait in settle_waited_s",
    )
    ap.add_argument(
        "--side-probe",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="side (peers) part: a `probe:` key for kfaild (e.g. max_outstanding_ms=10000); "
        "the runs' keys carry it",
    )
    ap.add_argument(
        "--knob-variants",
        default="",
        help="knobs part: only these variants (comma-separated labels, e.g. "
        "'default,wire client'); all by default",
    )
    ap.add_argument("--kfaild-intervals", default="20,10,5,2,1")
    ap.add_argument("--peer-intervals", default="20,10,5,2")
    ap.add_argument(
        "--outages",
        default="10,60,300",
        help="outage lengths in seconds for the outage part (all three brokers down)",
    )
    ap.add_argument("--quick", action="store_true", help="shorter runs, smaller database")
    ap.add_argument("--store-steps", default="insert,paced,growth")
    ap.add_argument(
        "--store-sizes",
        default="1000000,10000000,100000000",
        help="the sizes the growth step stops at to query (one database, grown)",
    )
    ap.add_argument(
        "--store-big-mode",
        choices=["auto", "writer", "direct"],
        default="auto",
        help="how the store part grows its database: the batch writer, store_bench "
        "--direct, or auto (direct when the writer would take over 15 min)",
    )
    ap.add_argument("--setup", action="store_true", help="create the venv, then continue")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--lab-down", action="store_true", help="stop the bench lab at the end")
    return ap


def parse_args(ap, argv):
    """The arguments, the comma-separated lists split (and numbers made ints)."""
    args = ap.parse_args(argv)
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.probe_clients = [x for x in args.probe_clients.split(",") if x]
    args.knob_variants = [x for x in args.knob_variants.split(",") if x]
    args.side_probe = dict(x.split("=", 1) for x in args.side_probe)
    args.store_sizes = [int(x) for x in args.store_sizes.split(",")]
    args.kfaild_intervals = [int(x) for x in args.kfaild_intervals.split(",")]
    args.peer_intervals = [int(x) for x in args.peer_intervals.split(",")]
    args.outages = [int(x) for x in args.outages.split(",")]
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = parser()
    args = parse_args(ap, argv)
    s = Settings.from_environ(os.environ, argv=argv, peer_impl=args.peer_impl)
    if args.setup:
        ensure_venv(s)
    if not args.report_only:
        for part in args.parts.split(","):
            if part not in PARTS:
                ap.error(f"unknown part {part} (known: {', '.join(PARTS)})")
            say("== part", part)
            PARTS[part](s, args)
    if args.lab_down:
        lab(s, "down")
        lab(s, "down", env=s.lab1_env, check=False)
    subprocess.run([sys.executable, str(s.bench / "report.py")], check=True)
