"""KMinion (Redpanda's Kafka exporter) and its end-to-end probe: a franz-go client, producer and
consumer group in one, that sends a message to every partition of its topic each probeInterval."""

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .common import say

KMINION_PORT = 28080  # its Prometheus endpoint: no lab or probe here uses it
KMINION_METRIC_RE = re.compile(
    r"^kminion_end_to_end_(messages_produced_total|messages_produced_failed_total|"
    r'messages_received_total|messages_lost_total)\{partition_id="(\d+)"\} (\S+)$',
    re.M,
)


def build_kminion(s, src):
    """KMinion built here from a git checkout of its source (KFAILD_KMINION_SRC: a work tree or a
    bare repository): its HEAD exported and `go build` run on it, its Go modules from the Go proxy,
    into the cache once per commit. Its source itself must come from that checkout: the Go proxy
    serves KMinion's dependencies but refuses its own module (github.com/cloudhut/kminion/v2 and
    github.com/redpanda-data/kminion/v2: 403 at every version, 4 December 2026)."""
    commit = subprocess.run(
        ["git", "-C", src, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    out = s.cache / f"kminion-{commit[:12]}"
    binary = out / "kminion"
    if os.access(binary, os.X_OK):
        return binary, commit
    tree = out / "src"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", src, "archive", "--format=tar", "HEAD"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    say(f"building KMinion {commit[:12]} (go build, modules from the Go proxy)")
    t0 = time.monotonic()
    subprocess.run(["go", "build", "-o", binary.with_suffix(".partial"), "."], cwd=tree, check=True)
    binary.with_suffix(".partial").rename(binary)
    say(f"built {binary} in {time.monotonic() - t0:.0f} s")
    shutil.rmtree(tree, ignore_errors=True)
    return binary, commit


def kminion_binary(s):
    """KMinion and the commit it was built from (named in the report): built here from
    KFAILD_KMINION_SRC, or the operator's build (KFAILD_KMINION, KFAILD_KMINION_COMMIT)."""
    if s.kminion_src:
        return build_kminion(s, s.kminion_src)
    if not s.kminion or not os.access(s.kminion, os.X_OK):
        sys.exit(
            f"side needs KMinion: KFAILD_KMINION={s.kminion!r} is not an executable; build "
            "https://github.com/redpanda-data/kminion (go build) and point KFAILD_KMINION at it"
        )
    if not re.fullmatch(r"[0-9a-f]{7,40}", s.kminion_commit):
        sys.exit(
            "side needs KFAILD_KMINION_COMMIT: the KMinion commit KFAILD_KMINION was built from"
        )
    return Path(s.kminion), s.kminion_commit


def kminion_config(s, path, topic, partitions):
    """KMinion's YAML (CONFIG_FILEPATH): only the end-to-end probe, on the one-broker lab; its
    exporter's scrape-time collectors of consumer groups, topics and log dirs off."""
    path.write_text(f"""kafka:
  brokers: ["{s.bootstrap1}"]
minion:
  consumerGroups:
    enabled: false
  topics:
    enabled: false
  logDirs:
    enabled: false
  endToEnd:
    enabled: true
    probeInterval: 20ms
    topicManagement:
      name: {topic}
      replicationFactor: 1
      partitionsPerBroker: {partitions}
    producer:
      requiredAcks: all
exporter:
  host: 127.0.0.1
  port: {KMINION_PORT}
""")


def counters_from_metrics(text):
    """KMinion's end-to-end counters from its /metrics text, per partition: acked (answers less
    failures), failed, received (in time), lost."""
    raw = {}
    for name, partition, value in KMINION_METRIC_RE.findall(text):
        raw.setdefault(name, {})[int(partition)] = round(float(value))
    failed = raw.get("messages_produced_failed_total", {})
    return {
        "acked": {
            p: v - failed.get(p, 0) for p, v in raw.get("messages_produced_total", {}).items()
        },
        "failed": failed,
        "received": raw.get("messages_received_total", {}),
        "lost": raw.get("messages_lost_total", {}),
    }


def kminion_counters():
    """counters_from_metrics() of the running KMinion."""
    with urllib.request.urlopen(f"http://127.0.0.1:{KMINION_PORT}/metrics", timeout=5) as r:
        return counters_from_metrics(r.read().decode())
