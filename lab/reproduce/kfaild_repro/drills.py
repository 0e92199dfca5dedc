"""kfaild's HTTP API: the steady state before a drill, running one (or adopting a finished one),
saving its JSON and trimmed timeline, and the scenario."""

import datetime as dt
import json
import os
import time
import urllib.error
import urllib.request

from .settings import META_FILES, RESULTS


class Api:
    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:  # reads too: the operator sees drill reasons unredacted
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                payload = json.loads(payload)
            except ValueError:
                payload = {"detail": payload.decode(errors="replace")}
            return e.code, payload

    def get(self, path):
        status, body = self.call("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body}")
        return body


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def result_files():
    return sorted(
        n
        for n in os.listdir(RESULTS)
        if n.endswith(".json") and not n.endswith(".timeline.json") and n not in META_FILES
    )


def wait_steady(api, cluster, timeout=300, max_gap=0.2, max_oldest=0.5, hold=3.0):
    """Every probe partition acked within max_gap s, its oldest message without an ack younger than
    max_oldest s, no sends held back, every ISR full — for `hold` s. kfaild's own preflight guard
    asks for less (oldest < 1 s, nothing held); waiting for more keeps a refusal at the fault
    rare."""
    t_end = time.time() + timeout
    steady_since = None
    last = ""
    while time.time() < t_end:
        c = api.get(f"/api/v1/clusters/{cluster}")
        worst = []
        ok = c.get("reachable", False)
        for t in c.get("topics", []):
            for p in t.get("partitions", []):
                pr = p.get("probe") or {}
                gap = pr.get("current_ack_gap_seconds")
                oldest = pr.get("oldest_outstanding_age_seconds")
                holding = pr.get("holding_since_us")
                worst.append(
                    f"{t['name']}/{p['partition']} gap={gap} outstanding={pr.get('outstanding')} "
                    f"oldest={oldest} holding={holding is not None} isr={p.get('isr')}"
                )
                if gap is None or gap >= max_gap or holding is not None:
                    ok = False
                if oldest is not None and oldest >= max_oldest:
                    ok = False
                if len(p.get("isr") or []) < len(p.get("replicas") or []):
                    ok = False
        last = "; ".join(worst)
        if ok:
            steady_since = steady_since or time.time()
            if time.time() - steady_since >= hold:
                return last
        else:
            steady_since = None
        time.sleep(0.5)
    raise RuntimeError("probe not steady: " + last)


def saved_ids():
    ids = set()
    for name in result_files():
        with open(os.path.join(RESULTS, name)) as f:
            ids.add(json.load(f)["drill"]["id"])
    return ids


def adoptable(api, request):
    """A drill of this kind that a previous, interrupted invocation started but did not save."""
    items = api.get("/api/v1/drills?limit=5").get("items", [])
    if not items:
        return None
    d = max(items, key=lambda x: x["id"])
    if d["id"] in saved_ids() or d["fault"] != request["fault"]:
        return None
    want = request.get("options", {})
    if any(d["options"].get(k) != v for k, v in want.items()):
        return None
    return d


def refused_in_run(d):
    """kfaild checks its guards again at preflight and right before the fault; a refusal there
    ends the drill without touching the node ("refused: ..." / "refused at the fault: ...")."""
    texts = [d.get("reason") or ""] + [r.get("reason") or "" for r in d.get("runs", [])]
    return d["state"] == "failed" and any(t.startswith("refused") for t in texts)


def run_drill(api, cluster, label, request, attempts=20):
    refused = []  # refusals: (drill id or None, reason)
    d = adoptable(api, request)
    steady = "adopted"
    load = loadavg() + " (adopted drill)"
    if d:
        log(f"{label}: adopting drill {d['id']} ({d['state']})")
        did = d["id"]
    for _ in range(0 if d else attempts):
        steady = wait_steady(api, cluster)
        load = loadavg()
        status, body = api.call("POST", f"/api/v1/clusters/{cluster}/drills", request)
        if status != 202:
            log(f"{label}: refused ({status}): {body.get('detail') or body}")
            if status != 409:
                raise RuntimeError(f"{label}: {status} {body}")
            refused.append(
                {
                    "id": None,
                    "at": dt.datetime.utcnow().isoformat() + "Z",
                    "reason": body.get("detail") or json.dumps(body),
                }
            )
            time.sleep(5)
            continue
        did = body["id"]
        log(f"{label}: drill {did} queued (load {load})")
        d = wait_done(api, did)
        if refused_in_run(d):
            reason = d.get("reason") or "; ".join(r.get("reason") or "" for r in d.get("runs", []))
            log(f"{label}: drill {did} refused by kfaild: {reason}")
            refused.append({"id": did, "at": d.get("finished"), "reason": reason})
            time.sleep(5)
            d = None
            continue
        break
    if not d:
        raise RuntimeError(
            f"{label}: refused {len(refused)} times: {refused[-1] if refused else ''}"
        )
    d = wait_done(api, did)
    log(f"{label}: drill {did} {d['state']} {d.get('reason') or ''}")
    timeline = api.get(f"/api/v1/drills/{did}/timeline")
    after = api.get(f"/api/v1/clusters/{cluster}")
    rec = {
        "label": label,
        "request": request,
        "load_before": load,
        "load_after": loadavg(),
        "steady_before": steady,
        "refused_attempts": refused,
        "drill": d,
        "cluster_after": after,
    }
    with open(os.path.join(RESULTS, f"{label}.json"), "w") as f:
        json.dump(rec, f, indent=1)
    with open(os.path.join(RESULTS, f"{label}.timeline.json"), "w") as f:
        json.dump(trim_timeline(timeline), f, indent=1)
    return rec


def wait_done(api, did):
    while True:
        d = api.get(f"/api/v1/drills/{did}")
        if d["state"] in ("done", "failed", "aborted"):
            return d
        time.sleep(2)


def trim_timeline(tl):
    """Keep the events that explain a stall (not the per-message probe events), -2 s .. +120 s."""
    keep = []
    for e in tl.get("items", []):
        rel = e.get("relative_s")
        if rel is not None and not (-2.0 <= rel <= 120.0):
            continue
        if e.get("source") == "client" and e.get("topic") not in ("orders", "single"):
            continue
        keep.append(e)
    out = dict(tl)
    out["items"] = keep
    out["count_kept"] = len(keep)
    out["trimmed"] = (
        "events from -2 s to +120 s of the first fault; client events of the probe topics only"
    )
    return out


def plan():
    base = {"allow_unavailable": True}
    p = [
        (f"kill-{i}", {"fault": "kill", "target": {"broker": 1}, "options": dict(base)})
        for i in (1, 2, 3)
    ]
    p += [
        (f"stop-{i}", {"fault": "stop", "target": {"broker": 1}, "options": dict(base)})
        for i in (1, 2, 3)
    ]
    if os.environ.get("REPRO_SHORT"):
        # Short plan: stop-no-election is a graceful stop of broker 1 too and counts as the 2nd.
        p = [x for x in p if x[0] not in ("stop-2", "stop-3")]
    p.append(
        (
            "stop-no-election",
            {
                "fault": "stop",
                "target": {"broker": 1},
                "options": dict(base, preferred_election=False),
            },
        )
    )
    return p


def scenario(api, cluster, note):
    resume = bool(os.environ.get("REPRO_RESUME"))
    t0 = time.time()
    started = dt.datetime.utcnow().isoformat() + "Z"
    order = plan()
    for label, req in order:
        if resume and os.path.exists(os.path.join(RESULTS, f"{label}.json")):
            continue
        run_drill(api, cluster, label, req)
    wall = time.time() - t0
    scen = {}
    spath = os.path.join(RESULTS, "scenario.json")
    if resume and os.path.exists(spath):
        with open(spath) as f:
            scen = json.load(f)
    scen.setdefault("invocations", []).append(
        {
            "started": started,
            "wall_s": round(wall, 1),
            "finished": dt.datetime.utcnow().isoformat() + "Z",
        }
    )
    scen["order"] = [p[0] for p in order]
    if note:
        scen["note"] = note
    with open(spath, "w") as f:
        json.dump(scen, f, indent=1)
    log(f"scenario wall time {wall:.0f} s")
