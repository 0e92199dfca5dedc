"""The saved drills read back from lab/results/reproduce, and the figures, ranges and table cells
the report is made of."""

import json
import os
import re

from .drills import result_files
from .settings import KILLS, ORDER, RESULTS, STOPS


def load_results():
    recs = {}
    for name in result_files():
        with open(os.path.join(RESULTS, name)) as f:
            r = json.load(f)
        recs[r["label"]] = r
    return recs


def parts(rec):
    out = []
    for run in rec["drill"].get("runs", []):
        a = run.get("analysis") or {}
        out.append((run, a, {(p["topic"], p["partition"]): p for p in a.get("partitions", [])}))
    return out


def first(rec):
    """(run, analysis, partitions) of the drill's first run, or (None, {}, {})."""
    p = parts(rec)
    return p[0] if p else (None, {}, {})


def us(v):
    return None if v is None else v / 1e6


def dur(iv):
    return None if not iv else (iv["end_us"] - iv["start_us"]) / 1e6


def kind(p, k="ack"):
    """The partition's result for one kind, with `outcome` (a result from before kfaild tested a
    stall's significance has none: it is shown as inconclusive rather than read the old way)."""
    r = dict((p or {}).get(k) or {})
    if "outcome" not in r:
        r = {
            "outcome": "inconclusive",
            "reason": "result from before stalls were tested against the noise (no outcome field)",
            "longest_gap": r.get("stall"),
        }
    return r


def stall_s(p, k="ack"):
    r = kind(p, k)
    return dur(r.get("stall")) if r["outcome"] == "stall" else None


def rng(vals, fmt="{:.2f}", unit=" s"):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    lo, hi = min(vals), max(vals)
    if fmt.format(lo) == fmt.format(hi):
        return fmt.format(lo) + unit
    return fmt.format(lo) + "–" + fmt.format(hi) + unit


def cell(p, k="ack"):
    """One partition's outcome for the per-run table: a number only for a stall."""
    if p is None:
        return "–"
    r = kind(p, k)
    if r["outcome"] == "stall":
        return f"**{dur(r['stall']):.3f}**"
    if r["outcome"] == "none":
        return f"none (gap {fmt3(dur(r.get('longest_gap')))}, noise {fmt3(dur(r.get('baseline')))})"
    return f"inconclusive: {r.get('reason') or 'no reason given'}"


def fmt3(v):
    return "–" if v is None else f"{v:.3f}"


def summary(items, unit=" s"):
    """items: [(label, partition result)] of one kind of figure (e.g. p0 in the kills). A range of
    the stalls only; nones and inconclusives are said as such, never as a number."""
    st, none, inc = [], [], []
    for label, p, k in items:
        r = kind(p, k)
        if r["outcome"] == "stall":
            st.append(dur(r["stall"]))
        elif r["outcome"] == "none":
            none.append((dur(r.get("longest_gap")), dur(r.get("baseline"))))
        else:
            inc.append((label, r.get("reason") or "no reason given"))
    n = len(items)
    if not n:
        return "n/a"
    out = []
    if st:
        out.append(rng(st, unit=unit) + ("" if len(st) == n else f" (stall in {len(st)} of {n})"))
    if none:
        out.append(
            f"none in {len(none)} of {n} (longest gap {rng([g for g, _ in none])} against a noise "
            f"of {rng([b for _, b in none])}: not significant)"
        )
    if inc:
        reasons = sorted({r for _, r in inc})
        labels = ", ".join(sorted({label for label, _ in inc}))
        out.append(f"inconclusive in {len(inc)} of {n} ({labels}): " + "; ".join(reasons))
    return "; ".join(out)


def counts(items):
    """failed / lost / unresolved over partition results, as a cell."""
    failed = sum(p.get("failed", 0) for p in items)
    lost = sum(p.get("lost", 0) for p in items)
    unres = sum(p.get("unresolved", 0) for p in items)
    settled = all(p.get("settled", False) for p in items)
    return failed, lost, unres, settled


def empty_figures():
    """Every figure of the report, as an empty list of per-run values."""
    names = (
        "detection",
        "fence_to_client",
        "kill_p0",
        "kill_fol",
        "kill_p0_recv",
        "kill_fol_recv",
        "kill_single",
        "stop_new_leader",
        "stop_client",
        "stop_p0",
        "stop_fol",
        "stop_p0_recv",
        "stop_fol_recv",
        "stop_single",
        "kill_counts",
        "stop_counts",
        "kill_single_counts",
        "stop_single_counts",
        "kill_single_phases",
        "stop_single_phases",
        "kill_labels",
        "stop_labels",
    )
    return {k: [] for k in names}


def figures(recs):
    """The report's figures over the kills and the graceful stops, one value per run (the short
    plan counts `stop-no-election` as a stop); a run without orders p0 adds none."""
    kills = [recs[k] for k in KILLS if k in recs]
    stops = [recs[k] for k in STOPS if k in recs]
    if len(stops) < 3 and "stop-no-election" in recs:  # the short plan
        stops.append(recs["stop-no-election"])
    f = empty_figures()
    for rec, pre in [(r, "kill") for r in kills] + [(r, "stop") for r in stops]:
        for run, _analysis, P in parts(rec):
            if P.get(("orders", 0)):
                add_run(f, pre, rec["label"], run, P)
    return f


def add_run(f, pre, label, run, P):
    """One run's values appended to the figures: pre is "kill" or "stop"."""
    p0 = P[("orders", 0)]
    f[f"{pre}_labels"].append(label)
    ph = p0["phases"]
    if pre == "kill":
        f["detection"].append(us(ph.get("detection_us")))
        if ph.get("client_update_at_us") and ph.get("fenced_at_us"):
            f["fence_to_client"].append(us(ph["client_update_at_us"] - ph["fenced_at_us"]))
    else:
        if ph.get("new_leader_at_us"):
            f["stop_new_leader"].append(us(ph["new_leader_at_us"] - run["fault_us"]))
        if ph.get("client_update_at_us"):
            f["stop_client"].append(us(ph["client_update_at_us"] - run["fault_us"]))
    f[f"{pre}_p0"].append((label, p0, "ack"))
    f[f"{pre}_p0_recv"].append((label, p0, "receive"))
    for k in (("orders", 1), ("orders", 2)):
        if k in P:
            f[f"{pre}_fol"].append((label, P[k], "ack"))
            f[f"{pre}_fol_recv"].append((label, P[k], "receive"))
    f[f"{pre}_counts"].append(counts([p for k, p in P.items() if k[0] == "orders"]))
    s = P.get(("single", 0))
    if s:
        f[f"{pre}_single"].append((label, s, "ack"))
        f[f"{pre}_single_counts"].append(counts([s]))
        f[f"{pre}_single_phases"].append(
            (
                us(s["phases"].get("node_back_us")),
                us(s["phases"].get("resume_us")),
                s.get("role"),
            )
        )


def counts_cell(cs):
    if not cs:
        return "n/a"
    failed = rng([c[0] for c in cs], "{:d}", "")
    out = failed
    unres = [c[2] for c in cs]
    if any(unres):
        out += f" (+ {rng(unres, '{:d}', '')} unresolved: no fate when the analysis settled)"
    elif all(c[3] for c in cs):
        out += " (every message settled)"
    return out


def single_cell(items, phases):
    s = summary(items)
    nb = [x[0] for x in phases]
    rs = [x[1] for x in phases]
    if any(v is not None for v in nb):
        s += f" (fault → node back {rng(nb)}; node back → first ack {rng(rs)})"
    return s


def leader_after(rec, topic="orders", part=0):
    for t in rec["cluster_after"].get("topics", []):
        if t["name"] == topic:
            for p in t["partitions"]:
                if p["partition"] == part:
                    return p
    return None


def probe_clients(recs):
    """{json of the settings: [labels]} over every run's probe_client."""
    seen = {}
    for label in ORDER:
        if label in recs:
            for run, _analysis, _partitions in parts(recs[label]):
                pc = run.get("probe_client")
                if pc is not None:
                    seen.setdefault(json.dumps(pc, sort_keys=True), []).append(label)
    return seen


def timeline_lines(label, until_s, run_no=1, limit=60):
    path = os.path.join(RESULTS, f"{label}.timeline.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        tl = json.load(f)
    lines = []
    for e in tl.get("items", []):
        if e.get("run") not in (None, run_no):
            continue
        rel = e.get("relative_s")
        if rel is None or rel < -0.5 or rel > until_s:
            continue
        if e.get("topic") not in (None, "orders", "single"):
            continue
        if e.get("source") == "probe" and e.get("kind") not in ("held_back", "idle"):
            continue
        if (
            e.get("source") in ("client", "metadata", "probe")
            and e.get("topic") == "orders"
            and e.get("partition") not in (0, None)
        ):
            continue
        d = e.get("detail") or {}
        text = (
            d.get("line")
            or d.get("text")
            or d.get("message")
            or json.dumps(d, separators=(",", ":"))
        )
        if len(text) > 150:
            text = text[:147] + "..."
        where = f" {e['topic']}-{e.get('partition')}" if e.get("topic") is not None else ""
        b = f" b{e['broker']}" if e.get("broker") is not None else ""
        lines.append(f"{rel:+8.3f} s  {e['t'][11:23]}  {e['source']}/{e['kind']}{b}{where}  {text}")
    if len(lines) > limit:
        lines = lines[:limit] + [
            f"  ... {len(lines) - limit} more events in lab/results/reproduce/{label}.timeline.json"
        ]
    return lines


def timeline_marks(label):
    """fenced / broker's own 'Leader orders-0 starts' / first producer update of orders-0, s after
    the fault."""
    path = os.path.join(RESULTS, f"{label}.timeline.json")
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        items = json.load(fh).get("items", [])
    m = {}
    for e in items:
        r = e.get("relative_s")
        if r is None or r < 0 or e.get("run") not in (None, 1):
            continue
        k = e.get("kind")
        if k == "fenced" and "fenced" not in m:
            m["fenced"] = r
        if (
            k == "leader_epoch_start"
            and e.get("topic") == "orders"
            and e.get("partition") == 0
            and "epoch" not in m
        ):
            m["epoch"] = r
        if (
            k == "leader_change"
            and e.get("topic") == "orders"
            and e.get("partition") == 0
            and "meta" not in m
        ):
            m["meta"] = r
        if (
            k == "client_leader_update"
            and e.get("topic") == "orders"
            and e.get("partition") == 0
            and (e.get("detail") or {}).get("client") == "producer"
            and "producer" not in m
        ):
            m["producer"] = r
        if k == "started" and e.get("source") == "injector" and "started" not in m:
            m["started"] = r
        if (
            k == "leader_change"
            and e.get("topic") == "single"
            and (e.get("detail") or {}).get("to") == 1
            and "single_leader" not in m
        ):
            m["single_leader"] = r
    return m


def load_range(recs):
    vals = []
    for r in recs.values():
        for k in ("load_before", "load_after"):
            try:
                vals.append(float(r[k].split()[0]))
            except (KeyError, ValueError, IndexError):
                pass
    return f"{min(vals):.1f} to {max(vals):.1f}" if vals else "n/a"


def stalls_of(items):
    return [dur(kind(p, k)["stall"]) for _, p, k in items if kind(p, k)["outcome"] == "stall"]


def rel_s(run, key):
    return (
        (run[key] - run["fault_us"]) / 1e6 if run and run.get(key) and run.get("fault_us") else None
    )


def exit_after_s(run):
    m = re.search(r"exited after (\d+) ms", (run or {}).get("fault_detail") or "")
    return int(m.group(1)) / 1000 if m else None


def end_rel(run, iv):
    return None if not iv else (iv["end_us"] - run["fault_us"]) / 1e6


def coupling(recs, labels):
    """Per drill: (label, p0's candidate end, p1's candidate end, p1's noise interval) after the
    fault."""
    out = []
    for label in labels:
        if label not in recs:
            continue
        run, a, P = first(recs[label])
        p0, p1 = P.get(("orders", 0)), P.get(("orders", 1))
        if not (run and p0 and p1):
            continue
        k0, k1 = kind(p0), kind(p1)
        out.append((label, end_rel(run, k0.get("longest_gap")), k1, run))
    return out


def followers_cell(items):
    by = {}
    for label, p, k in items:
        by.setdefault(p["partition"], []).append((label, p, k))
    return "; ".join(f"p{i}: {summary(v)}" for i, v in sorted(by.items()))
