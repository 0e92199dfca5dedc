"""outage: the kfaild binary's probe through a whole-cluster outage, and how it recovers."""

import os
import re
import subprocess
import time

from ..build import build_info, ensure_built
from ..common import fresh_db, load, now_us, say, sh, stop
from ..kfaild import (
    PROBE_COUNTERS,
    KfaildApi,
    kfaild_config,
    probe_counters,
    probe_partitions,
    wait_http_port,
)
from ..lab import delete_topic_java, kill_time_us, lab, lab_up
from ..results import merge_runs, previous, save

OUTAGE_ASSIGNMENT = "1:2:3,2:3:1,3:1:2"
OUTAGE_PARTITIONS = 3
OUTAGE_MIN_ISR = 2  # kfaild_config's min.insync.replicas
# `lab up --timeout 400` plus a margin: past it the probe counts as never steady.
RECOVERY_TIMEOUT_S = 420
ACK_GAP_LOG_RE = re.compile(r"probe bench: ack gap on (\S+)\[(\d+)\]: ([\d.]+) s")
TIMELINE_COLUMNS = [
    "t_s",
    "max_ack_gap_s",
    "max_receive_gap_s",
    "max_oldest_outstanding_s",
    "holding_partitions",
    "outstanding",
    "held_ticks",
    "send_failed",
    "acked",
    "received",
]


def flowing(parts, gap_key):
    """Every probe partition has had an ack (receive) in the last second."""
    return len(parts) == OUTAGE_PARTITIONS and all(
        p[gap_key] is not None and p[gap_key] < 1.0 for p in parts.values()
    )


def writable(detail, topic, since_us):
    """The cluster accepts acks=all writes on every probe partition, as kfaild's metadata poller
    saw it in a snapshot taken after since_us (an older one still shows the cluster before the
    outage): a leader and at least min.insync.replicas in the ISR."""
    if not detail or (detail.get("metadata", {}).get("at_us") or 0) < since_us:
        return False
    for t in detail.get("topics", []):
        if t["name"] == topic:
            ps = t["partitions"]
            return len(ps) == OUTAGE_PARTITIONS and all(
                p.get("leader") is not None
                and p["leader"] >= 0
                and len(p.get("isr") or []) >= OUTAGE_MIN_ISR
                for p in ps
            )
    return False


def probe_steady(parts):
    """The drill guards' probe checks: no held sends, the oldest message without an ack younger
    than 1 s, the last ack less than 0.5 s ago, the last receipt less than 1 s ago."""
    return len(parts) == OUTAGE_PARTITIONS and all(
        p["holding_since_us"] is None
        and (
            p["oldest_outstanding_age_seconds"] is None or p["oldest_outstanding_age_seconds"] < 1.0
        )
        and p["current_ack_gap_seconds"] is not None
        and p["current_ack_gap_seconds"] < 0.5
        and p["current_receive_gap_seconds"] is not None
        and p["current_receive_gap_seconds"] < 1.0
        for p in parts.values()
    )


def timeline_row(t, parts):
    """One row of TIMELINE_COLUMNS: the worst gaps over the partitions, and the sums."""

    def most(key):
        xs = [p[key] for p in parts.values() if p.get(key) is not None]
        return round(max(xs), 3) if xs else None

    c = probe_counters(parts)
    return [
        round(t, 1),
        most("current_ack_gap_seconds"),
        most("current_receive_gap_seconds"),
        most("oldest_outstanding_age_seconds"),
        sum(p["holding_since_us"] is not None for p in parts.values()),
        sum(p.get("outstanding") or 0 for p in parts.values()),
        c["held_ticks"],
        c["send_failed"],
        c["acked"],
        c["received"],
    ]


def wait_probe_steady(api, topic, hold_s, timeout):
    """Polls every 100 ms until the probe has been steady for hold_s without a break."""
    t0 = time.monotonic()
    since, parts = None, {}
    while time.monotonic() - t0 < timeout:
        parts = probe_partitions(api.get(), topic)
        now = time.monotonic()
        if probe_steady(parts):
            since = since or now
            if now - since >= hold_s:
                return parts, round(now - t0, 1)
        else:
            since = None
        time.sleep(0.1)
    raise RuntimeError(f"the probe was not steady for {hold_s} s within {timeout} s; last: {parts}")


def longest_gap_of(gaps, since_us):
    """The longest of the gaps endpoint's items that end after since_us, in seconds and seconds
    after since_us; None when none does."""
    gaps = [g for g in gaps if g["end_us"] > since_us]
    if not gaps:
        return None
    g = max(gaps, key=lambda g: g["duration_us"])
    return {
        "topic": g["topic"],
        "partition": g["partition"],
        "duration_s": g["duration_us"] / 1e6,
        "start_after_kill_s": (g["start_us"] - since_us) / 1e6,
        "end_after_kill_s": (g["end_us"] - since_us) / 1e6,
        "gaps_after_kill": len(gaps),
    }


def longest_gap(api, kind, since_us):
    listing = api.get(f"/gaps?kind={kind}&limit=1000") or {}
    return longest_gap_of(listing.get("items", []), since_us)


def rounded(x, digits):
    return None if x is None else round(x, digits)


def one_outage(s, secs, invocation):
    topic = f"outage-{secs}s-{time.strftime('%Y%m%d-%H%M%S')}"
    db, cfg = s.work / f"outage-{secs}.db", s.work / f"outage-{secs}.yaml"
    log_path = s.work / f"outage-{secs}-kfaild.log"
    fresh_db(db)
    kfaild_config(s, cfg, db, topic, OUTAGE_PARTITIONS, assignment=OUTAGE_ASSIGNMENT, http_port=0)
    cmd = [s.build / "server/kfaild", "--config", cfg]
    rec = {
        "outage_s": secs,
        "topic": topic,
        "command": invocation,
        "kfaild_command": sh(cmd),
        "log": str(log_path),
        "load_before": load(),
    }
    say("$", sh(cmd))
    log = open(log_path, "w")
    proc = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT)
    up = None
    try:
        api = KfaildApi(wait_http_port(proc, log_path, 60))
        parts, rec["steady_before_kill_after_s"] = wait_probe_steady(api, topic, 10, 180)
        detail = api.get() or {}
        rec["probe_client_settings"] = detail.get("probe", {}).get("client_settings")
        rec["counters_before"] = probe_counters(parts)
        rec["load_at_kill"] = load()

        kill_mono = time.monotonic()
        kills = [lab(s, "kill", b) for b in ("1", "2", "3")]
        rec["lab_kill_output"] = [k.stdout.strip() for k in kills]
        kill_us = kill_time_us(kills[0].stdout, now_us())
        log_offset = log_path.stat().st_size
        say(f"brokers 1-3 killed; down for {secs} s")
        outage_timeline = []
        while time.monotonic() - kill_mono < secs:
            outage_timeline.append(
                timeline_row(time.monotonic() - kill_mono, probe_partitions(api.get(), topic))
            )
            time.sleep(max(0.0, min(1.0, secs - (time.monotonic() - kill_mono))))

        up_cmd = [s.lab, "up", "--timeout", "400"]
        start_mono, start_us = time.monotonic(), now_us()
        say("$", sh(up_cmd))
        up = subprocess.Popen(
            [str(c) for c in up_cmd],
            env={**os.environ, **s.lab_env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        rec["down_s"] = round(start_mono - kill_mono, 2)
        writable_s = acks_s = receives_s = steady_s = lab_up_s = None
        lapses, recovery_timeline, last_row = [], [], -1.0
        polls_before = api.failures
        while True:
            t_poll = time.monotonic()
            detail = api.get()
            parts_now = probe_partitions(detail, topic)
            t = time.monotonic() - start_mono
            if writable_s is None and writable(detail, topic, start_us):
                writable_s = t
                say(f"every probe partition writable (metadata) {t:.1f} s after the start")
            if lab_up_s is None and up.poll() is not None:
                lab_up_s = t
            if parts_now:
                parts = parts_now
                if t - last_row >= 1.0:
                    recovery_timeline.append(timeline_row(t, parts))
                    last_row = t
                if acks_s is None and flowing(parts, "current_ack_gap_seconds"):
                    acks_s = t
                    say(f"acks resumed {t:.1f} s after the start")
                if receives_s is None and flowing(parts, "current_receive_gap_seconds"):
                    receives_s = t
                    say(f"receives resumed {t:.1f} s after the start")
                if steady_s is None and probe_steady(parts):
                    steady_s = t
                    say(f"probe steady {t:.1f} s after the start")
                elif steady_s is not None and not probe_steady(parts):
                    lapses.append(timeline_row(t, parts))
            # The consumer is not part of the steady checks, but its recovery is worth seeing.
            if (
                steady_s is not None
                and t >= steady_s + 10
                and lab_up_s is not None
                and (receives_s is not None or t >= steady_s + 60)
            ):
                break
            if t > RECOVERY_TIMEOUT_S:
                say(f"the probe was not steady within {RECOVERY_TIMEOUT_S} s of the start")
                break
            time.sleep(max(0.0, 0.1 - (time.monotonic() - t_poll)))
        rec["load_after"] = load()
        rec["counters_after"] = probe_counters(parts)
        rec["counters_delta"] = {
            k: rec["counters_after"][k] - rec["counters_before"][k] for k in PROBE_COUNTERS
        }
        rec.update(
            {
                "kill_us": kill_us,
                "start_us": start_us,
                "writable_s": rounded(writable_s, 2),
                "acks_resumed_s": rounded(acks_s, 2),
                "receives_resumed_s": rounded(receives_s, 2),
                "steady_s": rounded(steady_s, 2),
                "steady_after_acks_s": (
                    None if None in (acks_s, steady_s) else round(steady_s - acks_s, 2)
                ),
                "steady_after_writable_s": (
                    None if None in (writable_s, steady_s) else round(steady_s - writable_s, 2)
                ),
                "lab_up_s": rounded(lab_up_s, 1),
                "lab_up_exit": up.poll(),
                "lab_up_output": (up.stdout.read() or "")[-1500:],
                "not_steady_after_steady": lapses[:20],
                "lapses": len(lapses),
                "failed_polls_in_recovery": api.failures - polls_before,
                "longest_ack_gap": longest_gap(api, "ack", kill_us),
                "longest_receive_gap": longest_gap(api, "receive", kill_us),
                "timeline_columns": TIMELINE_COLUMNS,
                "outage_timeline": outage_timeline[:: max(1, len(outage_timeline) // 60)],
                "recovery_timeline": recovery_timeline,
            }
        )
        rec["claim_met"] = (
            rec["steady_after_acks_s"] is not None and rec["steady_after_acks_s"] <= 10
        )
        with open(log_path, errors="replace") as f:
            f.seek(log_offset)
            logged = [float(g) for _, _, g in ACK_GAP_LOG_RE.findall(f.read())]
        rec["longest_ack_gap_logged_s"] = max(logged) if logged else None
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        rec["error"] = str(e)[-2000:]
        say("failed:", rec["error"])
    finally:
        stop(proc)
        log.close()
        rec["kfaild_exit"] = proc.returncode
        if up is not None and up.poll() is None:
            up.wait()
        if up is None or up.returncode != 0:
            lab(s, "up", "--timeout", "400", check=False)
    delete_topic_java(s, topic)
    return rec


def part_outage(s, args):
    ensure_built(s, "kfaild")
    lab_up(s)
    s.work.mkdir(parents=True, exist_ok=True)
    invocation = " ".join([*s.bench_env, s.invocation])
    kept = previous(s, "outage", "outage_s")
    runs = []
    for secs in args.outages:
        runs.append(one_outage(s, secs, invocation))
        save(
            s,
            "outage",
            {
                "partitions": OUTAGE_PARTITIONS,
                "interval_ms": 20,
                "assignment": OUTAGE_ASSIGNMENT,
                "build": build_info(s),
                "runs": merge_runs(kept, runs, "outage_s"),
            },
        )
