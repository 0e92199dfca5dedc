"""The arithmetic on what the probes and Kafka's tools recorded: plain functions on plain data."""

import re
import statistics

# EndToEndLatency's progress line: "<count>\t<latency ms>", one per 1,000 records.
PROGRESS_RE = re.compile(r"^\d+\t")
PERF_RE = re.compile(r"([\d.]+) ms avg latency, ([\d.]+) ms max latency")


def median(xs):
    """The median of the values that are not None; None when there are none."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spacing(rows):
    """Send-time spacing from (partition, send µs) rows in send order: the differences between
    consecutive sends of each partition, pooled: their count, mean, population standard deviation,
    the 99th percentile of the absolute deviation from the mean, max and min. None with fewer than
    two differences."""
    diffs, last = [], {}
    for p, t in rows:
        if p in last:
            diffs.append(t - last[p])
        last[p] = t
    if len(diffs) < 2:
        return None
    # Plain floats: statistics.pstdev on ints computes exactly with fractions, far too slowly
    # for millions of values.
    n = len(diffs)
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / n
    devs = sorted(abs(d - mean) for d in diffs)
    return {
        "n": n,
        "mean_us": mean,
        "stddev_us": var**0.5,
        "p99_abs_dev_us": devs[int(0.99 * (n - 1))],
        "max_us": max(diffs),
        "min_us": min(diffs),
    }


def jitter_from_csv(path, since_us):
    """spacing() of probe.py's CSV (partition, _, send µs, ...) from since_us on."""
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            p, _, send, *_ = line.split(",")
            if int(send) >= since_us:
                rows.append((int(p), int(send)))
    rows.sort()
    return spacing(rows)


def e2e_summary(lines, fault_us):
    """EndToEndLatency's output around a fault from (arrival µs, line): the longest interval
    between progress lines that ends after the fault, the median interval before it (up to 1 s
    before), the largest latency it printed, and its summary lines."""
    progress = [(t, line) for t, line in lines if PROGRESS_RE.match(line)]
    longest = None
    for (t0, _), (t1, _) in zip(progress, progress[1:], strict=False):
        if t1 > fault_us and (longest is None or t1 - t0 > longest[1] - longest[0]):
            longest = (t0, t1)
    normal = [
        t1 - t0
        for (t0, _), (t1, _) in zip(progress, progress[1:], strict=False)
        if t1 < fault_us - 1_000_000
    ]
    text = [line for _, line in lines if not PROGRESS_RE.match(line)]
    return {
        "progress_lines": len(progress),
        "longest_line_interval_us": None if longest is None else longest[1] - longest[0],
        "normal_line_interval_us": median(normal),
        "summary": [
            line for line in text if "latency" in line.lower() or "percentile" in line.lower()
        ][-5:],
        "max_latency_ms_printed": max([float(line.split("\t")[1]) for _, line in progress] or [0]),
    }


def perf_summary(lines, fault_us):
    """ProducerPerformance's window lines around a fault from (arrival µs, line)."""
    windows = []
    for t, line in lines:
        m = PERF_RE.search(line)
        if m and "records sent" in line:
            windows.append(
                {"t_us": t, "avg_ms": float(m.group(1)), "max_ms": float(m.group(2)), "line": line}
            )
    # A window line is printed every 5 s and covers the records completed in it: the stall shows
    # in the lines printed after the fault.
    around = [w for w in windows if fault_us < w["t_us"] <= fault_us + 60_000_000]
    return {
        "windows": len(windows),
        "max_latency_ms_around_fault": max([w["max_ms"] for w in around] or [0]),
        "max_latency_ms_before_fault": max(
            [w["max_ms"] for w in windows[1:] if w["t_us"] < fault_us] or [0]
        ),
        "lines_around_fault": [w["line"] for w in around][:6],
        "final": [line for _, line in lines if "percentile" in line or "99.9th" in line][-1:],
    }


def latency_stats(msgs):
    """Send → ack latency of (send µs, ack µs) pairs: p50, p90, p99 and the mean in ms, each
    percentile the value at index q × n of the sorted latencies. Also per tick (sends less than a
    quarter interval, 5 ms, apart belong to one tick): over the ticks that reached the most
    partitions, the median of each tick's first and of its last ack. None without messages."""
    lat = sorted(ack - send for send, ack in msgs)
    if not lat:
        return None

    def at(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))]

    out = {
        "n": len(lat),
        "p50_ms": at(0.5) / 1000,
        "p90_ms": at(0.9) / 1000,
        "p99_ms": at(0.99) / 1000,
        "mean_ms": sum(lat) / len(lat) / 1000,
    }
    ticks, last = [], None
    for send, ack in sorted(msgs):
        if last is None or send - last > 5000:
            ticks.append([])
        ticks[-1].append(ack - send)
        last = send
    widest = max(len(t) for t in ticks)
    full = [t for t in ticks if len(t) == widest]
    if full:
        firsts, lasts = sorted(min(t) for t in full), sorted(max(t) for t in full)
        out.update(
            ticks=len(full),
            tick_first_p50_ms=firsts[len(firsts) // 2] / 1000,
            tick_last_p50_ms=lasts[len(lasts) // 2] / 1000,
        )
    return out
