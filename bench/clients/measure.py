#!/usr/bin/env python3
"""One fault through several clients at once: the client profiles' figures of docs/CLIENTS.md.

Starts kfaild (build/server/kfaild) on a running lab with the profiles of --profiles, runs each
drill of --plan against broker 1 (the leader of the probe topic's partition 0, a follower of 1
and 2), keeps each drill's JSON under --out and prints one table row per fault and profile: the
ack stalls of the partitions the target led and of those it followed (min-max over the runs and,
for a rolling restart, its steps), the leader partition's
client discovery, and what ended each stall. --write-doc SECTION puts the table into
docs/CLIENTS.md between its SECTION markers.

  KFAILD_LAB_NETNS=1 KFAILD_LAB_PORT_BASE=39000 KFAILD_LAB_DIR=/tmp/clients-lab lab/lab up
  KFAILD_LAB_PORT_BASE=39000 KFAILD_LAB_DIR=/tmp/clients-lab \\
      bench/clients/measure.py --plan kill:3,stop:3,pause:3,isolate-drop:3,isolate-reject:3 \\
      --profiles librdkafka,app-defaults,java --write-doc measured-java

The isolate faults need the namespaced lab (KFAILD_LAB_NETNS=1) and root. Standard library only.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "CLIENTS.md"

# Each profile kfaild can run here, as probe.profiles lists it.
PROFILES = {
    "librdkafka": "{name: librdkafka, client: librdkafka}",
    "app-defaults": (
        '{name: app-defaults, client: librdkafka, settings: {reconnect.backoff.max.ms: "10000"}}'
    ),
    # librdkafka with its socket timeout at the Java client's request.timeout.ms: whether that
    # setting is what bounds a blackholed leader's stall.
    "rd-socket30": (
        '{name: rd-socket30, client: librdkafka, settings: {socket.timeout.ms: "30000"}}'
    ),
    "wire": "{name: wire, client: wire}",
    "java": "{name: java, client: java}",
}

FAULTS = {
    "kill": {"fault": "kill"},
    "stop": {"fault": "stop"},
    "pause": {"fault": "pause", "options": {"pause_s": 12}},
    "isolate-drop": {
        "fault": "isolate",
        "options": {"from": "all", "mode": "drop", "duration_s": 75},
    },
    "rolling": {"fault": "rolling_restart", "options": {"between_s": 5}},
    "isolate-reject": {
        "fault": "isolate",
        "options": {"from": "all", "mode": "reject", "duration_s": 20},
    },
}


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def lab(*args):
    return subprocess.run(
        [str(REPO / "lab" / "lab"), *args], capture_output=True, text=True, check=True
    ).stdout


def config(work, profiles, interval_ms):
    status = json.loads(lab("status", "--json"))
    nodes = {n["node"]: n for n in status["nodes"]}
    brokers = status["bootstrap"]
    lines = [
        "log_level: info",
        f"http: {{port: 0, token_file: {work}/token}}",
        f"storage: {{path: {work}/kfaild.db}}",
        "clusters:",
        "  - name: lab",
        f"    bootstrap: {brokers}",
        "    probe:",
        f"      interval_ms: {interval_ms}",
        "      profiles:",
        *[f"        - {PROFILES[p]}" for p in profiles],
        "      topics:",
        "        - name: clients",
        '          create: {replica_assignment: "1:2:3,2:3:1,3:1:2", '
        'configs: {min.insync.replicas: "2"}}',
        "    inventory:",
    ]
    for i in (1, 2, 3, 100):
        n = nodes[i]
        node_dir = Path(n["pid_file"]).parent
        lines += [f"      - id: {i}"] + (["        role: controller"] if i == 100 else [])
        if n.get("netns_name"):
            lines += [
                f"        address: {n['address']}",
                "        gray_faults: true",
                f"        netns: {n['netns_name']}",
                f"        fill_dir: {n['fill_dir']}",
            ]
        lines.append(
            f"        local: {{pid_file: {n['pid_file']}, start_command: [{REPO}/lab/lab, start, "
            f'"{i}"], log_dir: {node_dir}/logs}}'
        )
    return "\n".join(lines) + "\n"


class Kfaild:
    def __init__(self, work, text):
        (work / "token").write_text("clients-bench-token-0123456789abcdef\n")
        os.chmod(work / "token", 0o600)
        (work / "kfaild.yaml").write_text(text)
        self.log = open(work / "kfaild.log", "w")
        self.proc = subprocess.Popen(
            [str(REPO / "build" / "server" / "kfaild"), "--config", str(work / "kfaild.yaml")],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.port = None
        for _ in range(300):
            for line in (work / "kfaild.log").read_text().splitlines():
                if "http: listening on http://" in line:
                    self.port = int(line.split("://", 1)[1].split(":")[1].split("/")[0])
            if self.port or self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if not self.port:
            raise SystemExit("kfaild did not start: " + (work / "kfaild.log").read_text()[-3000:])

    def call(self, method, path, body=None):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={
                "Authorization": "Bearer clients-bench-token-0123456789abcdef",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def steady(kfaild, timeout=300):
    """Every profile probing, every partition acked within the last half second, 3 s in a row."""
    good, deadline = 0, time.time() + timeout
    while time.time() < deadline and good < 12:
        _, c = kfaild.call("GET", "/api/v1/clusters/lab")
        ok = all(
            p["phase"] == "probing"
            and p["partitions"]
            and all((q["probe"].get("current_ack_gap_seconds") or 9) < 0.5 for q in p["partitions"])
            for p in c.get("profiles") or []
        )
        good = good + 1 if ok else 0
        time.sleep(0.25)
    return good >= 12


def drill(kfaild, request):
    for _ in range(20):
        if not steady(kfaild):
            log("not steady yet")
        status, body = kfaild.call("POST", "/api/v1/clusters/lab/drills", request)
        if status != 202:
            log("refused:", status, body)
            time.sleep(5)
            continue
        while True:
            time.sleep(2)
            _, d = kfaild.call("GET", f"/api/v1/drills/{body['id']}")
            if d["state"] in ("done", "failed", "aborted"):
                break
        if d["state"] == "done":
            return d
        log("drill", d["id"], d["state"], d.get("reason"))
        time.sleep(5)
    raise SystemExit("no drill done for " + json.dumps(request))


def views(run):
    """(profile, analysis) for every profile of the run, the primary first."""
    out = [(run.get("profile", "primary"), run.get("analysis"))]
    out += [(p["profile"], p.get("analysis")) for p in run.get("profiles", [])]
    return out


def ended_by(p):
    m = p.get("mechanism")
    if m and m.get("name") not in (None, "none"):
        return m["name"]
    ph = p.get("phases") or {}
    if ph.get("client_update_at_us"):
        return "client_leader_update"
    if ph.get("fenced_at_us"):
        return "fenced"
    return p["ack"].get("outcome", "?")


def span(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return "-"
    return f"{v[0]:.2f} s" if v[0] == v[-1] else f"{v[0]:.2f}-{v[-1]:.2f} s"


def table(results):
    rows = [
        "| fault | profile | led partition's ack stall | its discovery | ended by | "
        "followers' ack stalls | runs | inconclusive |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fault, drills in results.items():
        per = {}
        for d in drills:
            for run in d["runs"]:
                for name, a in views(run):
                    e = per.setdefault(
                        name, {"lead": [], "disc": [], "end": [], "fol": [], "runs": 0, "n/a": 0}
                    )
                    if not a:
                        continue
                    e["runs"] += 1
                    for p in a["partitions"]:
                        # An inconclusive outcome is no figure: counted apart.
                        stall = p["ack"].get("stall") or {}
                        outcome = p["ack"].get("outcome")
                        s = stall.get("duration_us", 0) / 1e6 if stall else 0.0
                        if outcome == "inconclusive":
                            e["n/a"] += 1
                            continue
                        if "leader" in p["role"]:
                            e["lead"].append(s)
                            disc = (p.get("phases") or {}).get("discovery_us")
                            e["disc"].append(disc / 1e6 if disc is not None else None)
                            e["end"].append(ended_by(p))
                        elif "follower" in p["role"]:
                            e["fol"].append(s)
        for name, e in per.items():
            ends = ", ".join(sorted({f"{x} ×{e['end'].count(x)}" for x in e["end"]}))
            rows.append(
                f"| {fault} | {name} | {span(e['lead'])} | {span(e['disc'])} | {ends} | "
                f"{span(e['fol'])} | {e['runs']} | {e['n/a']} |"
            )
    return "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--plan", default="kill:3,stop:3,pause:3,isolate-drop:3,isolate-reject:3")
    ap.add_argument("--profiles", default="librdkafka,app-defaults,java")
    ap.add_argument("--interval-ms", type=int, default=20)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "clients"))
    ap.add_argument(
        "--write-doc",
        metavar="SECTION",
        help="put the table into docs/CLIENTS.md between <!-- SECTION: begin/end -->",
    )
    ap.add_argument("--report-only", action="store_true", help="the table from --out's JSON")
    args = ap.parse_args()
    out = Path(args.out)
    results = {}
    if not args.report_only:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        work = Path(tempfile.mkdtemp(prefix="kfaild-clients-"))
        kfaild = Kfaild(work, config(work, args.profiles.split(","), args.interval_ms))
        try:
            for item in args.plan.split(","):
                fault, count = item.split(":")
                for n in range(int(count)):
                    request = dict(FAULTS[fault])
                    if fault != "rolling":
                        request["target"] = {"broker": 1}
                    request.setdefault("options", {})
                    request["options"] = dict(request["options"], baseline_s=10)
                    log(f"{fault} {n + 1}/{count}")
                    d = drill(kfaild, request)
                    (out / f"{fault}-{n + 1}.json").write_text(json.dumps(d, indent=1))
        finally:
            kfaild.stop()
    for f in sorted(out.glob("*.json")):
        results.setdefault(f.stem.rsplit("-", 1)[0], []).append(json.loads(f.read_text()))
    text = table(results)
    print(text)
    if args.write_doc:
        begin, end = f"<!-- {args.write_doc}: begin -->", f"<!-- {args.write_doc}: end -->"
        doc = DOC.read_text()
        head, rest = doc.split(begin, 1)
        DOC.write_text(head + begin + "\n" + text + end + rest.split(end, 1)[1])


if __name__ == "__main__":
    main()
