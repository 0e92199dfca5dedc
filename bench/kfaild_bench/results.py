"""bench/results/<part>.json: each part's figures, rerunnable a size at a time."""

import json
import time

from .build import machine
from .common import say


def previous(s, part, key):
    """Entries of an earlier run of this part, by key, so rerunning some sizes keeps the rest."""
    p = s.results / f"{part}.json"
    if not p.exists():
        return {}
    return {e[key]: e for e in json.loads(p.read_text()).get("runs", [])}


def merge_runs(old, new, key):
    """The earlier runs by key with the new ones in their place, in key order."""
    merged = {**old, **{e[key]: e for e in new}}
    return [merged[k] for k in sorted(merged)]


def save(s, part, data):
    s.results.mkdir(exist_ok=True)
    data = {
        "part": part,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(s.build),
        **data,
    }
    (s.results / f"{part}.json").write_text(json.dumps(data, indent=1) + "\n")
    say("wrote", s.results / f"{part}.json")
