"""The state dir (KFAILD_LAB_DIR, default <repo>/.lab) and the jar cache (KFAILD_CACHE): node
dirs, pid files, lab.json (what the lab was brought up with) and the lock the verbs that start and
stop nodes hold."""

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Self

from .console import warn
from .errors import LabError
from .settings import KAFKA_VERSION, REPO

# lab.json: what the lab was brought up with (cluster id, port base, settings, modes).
Lab = dict[str, Any]


def extra_jvm_opts() -> list[str]:
    """KFAILD_LAB_JVM_OPTS: more options for every node's JVM, after the ones above (the test run's
    labs use C1 only, tests/CMakeLists.txt). Remembered in the state dir when set, so that a node
    restarted without it (by kfaild's injectors, over ssh, in a container) starts as its lab did;
    set to "" to forget them."""
    saved = state_dir() / "jvm-opts"
    env = os.environ.get("KFAILD_LAB_JVM_OPTS")
    if env is not None:
        if env.strip():
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(env.strip() + "\n")
        elif saved.exists():
            saved.unlink()
        return env.split()
    return saved.read_text().split() if saved.exists() else []


def state_dir() -> Path:
    env = os.environ.get("KFAILD_LAB_DIR")
    return Path(env).expanduser().resolve() if env else REPO / ".lab"


def cache_dir() -> Path:
    env = os.environ.get("KFAILD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kfaild"


def kafka_home() -> Path:
    return cache_dir() / f"kafka-{KAFKA_VERSION}"


def libs_dir() -> Path:
    return kafka_home() / "libs"


def node_dir(node: int) -> Path:
    return state_dir() / f"node{node}"


def props_path(node: int) -> Path:
    return node_dir(node) / "server.properties"


def pid_path(node: int) -> Path:
    return node_dir(node) / "kafka.pid"


def logs_path(node: int) -> Path:
    return node_dir(node) / "logs"


def lab_json_path() -> Path:
    return state_dir() / "lab.json"


def load_lab() -> Lab:
    try:
        with open(lab_json_path()) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise LabError(f"cannot read {lab_json_path()}: {e} (fix it or run `lab reset`)") from e


def save_lab(lab: Lab) -> None:
    ensure_state_dir()
    tmp = lab_json_path().with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(lab, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, lab_json_path())


def ensure_state_dir() -> None:
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True)
    ignore = d / ".gitignore"
    if not ignore.exists():
        # The default state dir is inside the repository; keep it out of git without touching
        # the repository's own .gitignore.
        ignore.write_text("*\n")


class StateLock:
    """Serialises the verbs that start and stop nodes; `kill`, `status` and `logs` never wait."""

    def __enter__(self) -> Self:
        ensure_state_dir()
        self.f = open(state_dir() / ".lock", "w")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            warn("waiting for another `lab` command on this state dir ...")
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()
