#!/usr/bin/env python3
"""Longest gap per partition around a fault time, from probe.py's CSV.

For each partition and kind (ack: delivery reports without error; receive: consumer reads), the
times are sorted and the longest interval between two consecutive ones that ends after the fault
and starts before fault + --window is the stall; the longest interval elsewhere is the baseline.

    gaps.py probe.csv --fault-us 1760000000000000 [--window 60] [--json]

Standard library only.
"""

import argparse
import csv
import json
import sys
from collections import defaultdict


def longest(times, fault_us, until_us):
    times.sort()
    stall = None
    baseline = None
    for a, b in zip(times, times[1:], strict=False):
        if b > fault_us and a < until_us:
            if stall is None or b - a > stall[1] - stall[0]:
                stall = (a, b)
    for a, b in zip(times, times[1:], strict=False):
        if stall is not None and (a, b) == stall:
            continue
        if baseline is None or b - a > baseline[1] - baseline[0]:
            baseline = (a, b)
    return stall, baseline


def sending_at_fault(sends, fault_us):
    """Whether a probe kept sending up to the fault, so that the start of the stall it measured
    (its last ack before the fault) is the cluster's and not a pause of its own: `sends` are one
    partition's (send_us, ack_us or None, ok). Between the last message acked before the fault and
    the first sent after it, the largest interval between two consecutive sends. A probe whose
    sender fell behind skips ticks (probe.py) or sends them late, and its stall then starts at its
    last send before the pause, up to that interval early."""
    sends = sorted(sends)
    acked = [t for t, a, ok in sends if ok and a is not None and a < fault_us]
    after = [t for t, _, _ in sends if t >= fault_us]
    if not acked or not after:
        return None
    window = [t for t, _, _ in sends if acked[-1] <= t <= after[0]]
    return {
        "last_acked_send_us": acked[-1],
        "first_send_after_us": after[0],
        "largest_send_gap_us": max(b - a for a, b in zip(window, window[1:], strict=False)),
    }


def analyse(path, fault_us, window_s):
    acks = defaultdict(list)
    receives = defaultdict(list)
    failed = defaultdict(int)
    sends = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            p = int(row["partition"])
            if row["send_us"]:
                sends[p].append(
                    (
                        int(row["send_us"]),
                        int(row["ack_us"]) if row["ack_us"] else None,
                        row["ack_error"] == "0",
                    )
                )
            if row["ack_us"] and row["ack_error"] == "0":
                acks[p].append(int(row["ack_us"]))
            elif row["ack_us"]:
                failed[p] += 1
            if row["receive_us"]:
                receives[p].append(int(row["receive_us"]))
    until = fault_us + int(window_s * 1e6)
    out = []
    for p in sorted(set(acks) | set(receives)):
        entry = {
            "partition": p,
            "failed": failed[p],
            "sending": sending_at_fault(sends[p], fault_us),
        }
        for kind, series in (("ack", acks[p]), ("receive", receives[p])):
            stall, baseline = longest(series, fault_us, until)
            entry[kind] = {
                "count": len(series),
                "stall_us": None if stall is None else stall[1] - stall[0],
                "stall_start_us": None if stall is None else stall[0],
                "stall_end_us": None if stall is None else stall[1],
                "baseline_us": None if baseline is None else baseline[1] - baseline[0],
            }
        out.append(entry)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--fault-us", type=int, required=True, help="fault time, wall-clock µs")
    ap.add_argument(
        "--window",
        type=float,
        default=60.0,
        help="a stall must start before fault + this many seconds",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = analyse(args.csv, args.fault_us, args.window)
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{'partition':>9} {'ack stall s':>12} {'recv stall s':>13} {'ack base s':>11} "
        f"{'failed':>7}"
    )

    def fmt(v):
        return "-" if v is None else f"{v / 1e6:.3f}"

    for e in result:
        print(
            f"{e['partition']:>9} {fmt(e['ack']['stall_us']):>12} "
            f"{fmt(e['receive']['stall_us']):>13}"
            f" {fmt(e['ack']['baseline_us']):>11} {e['failed']:>7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
