"""What `lab` prints: progress on stdout, warnings on stderr as `lab: <message>`."""

import datetime
import sys


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="milliseconds")


def say(msg: str = "") -> None:
    print(msg, flush=True)


def warn(msg: str) -> None:
    print(f"lab: {msg}", file=sys.stderr, flush=True)
