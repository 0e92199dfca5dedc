"""The commit, working tree and binary a run measured, kept in versions.json."""

import datetime as dt
import json
import os
import re
import subprocess

from .settings import REPO, RESULTS


def git(*args):
    return subprocess.run(["git", "-C", REPO] + list(args), capture_output=True, text=True).stdout


def record_versions(args):
    v = {}
    if args.kfaild_binary and os.path.exists(args.kfaild_binary):
        out = subprocess.run(
            [args.kfaild_binary, "--version"], capture_output=True, text=True
        ).stdout.strip()
        v["kfaild"] = out.splitlines()[0] if out else "n/a"
        m = re.search(r"librdkafka[ /]*v?([0-9][0-9.]*)", out)
        v["librdkafka"] = m.group(1) if m else "see kfaild --version"
        v["kfaild_version_output"] = out
        v["binary"] = args.kfaild_binary
    stamp = lambda path: dt.datetime.fromtimestamp(os.path.getmtime(path), dt.UTC)  # noqa: E731
    if args.binary_source:
        v["binary_source"] = args.binary_source
        if os.path.exists(args.kfaild_binary or ""):
            v["binary_copied"] = stamp(args.kfaild_binary).strftime("%Y-%m-%d %H:%M:%SZ")
        # The source's build time, unless it was rebuilt after the copy was taken.
        if os.path.exists(args.binary_source) and (
            not v.get("binary_copied") or stamp(args.binary_source) <= stamp(args.kfaild_binary)
        ):
            v["binary_built"] = stamp(args.binary_source).strftime("%Y-%m-%d %H:%M:%SZ")
    if args.git_state:
        # Taken when the binary was copied:
        # `(git rev-parse --short HEAD; git status --short) > FILE`.
        with open(args.git_state) as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
        v["commit"] = lines[0].strip() if lines else "n/a"
        v["tree_status"] = lines[1:]
        v["git_state_taken"] = dt.datetime.fromtimestamp(
            os.path.getmtime(args.git_state), dt.UTC
        ).strftime("%Y-%m-%d %H:%M:%SZ")
    else:
        v["commit"] = git("rev-parse", "--short", "HEAD").strip()
        v["tree_status"] = [line for line in git("status", "--short").splitlines() if line.strip()]
        v["git_state_taken"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    # Merged into what is there: a --report-only rerun keeps what only the run itself could see
    # (a fresh run starts from an empty lab/results/reproduce/).
    path = os.path.join(RESULTS, "versions.json")
    old = {}
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    old.update(v)
    with open(path, "w") as f:
        json.dump(old, f, indent=1)
