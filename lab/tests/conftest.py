"""Shared set-up of the lab's tests: the package on the path, and an environment with no lab
variables set and the state dir in the test's own tmp_path."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parent.parent

# The node ids are fixed when kfaild_lab.settings is imported: import it with the default counts
# whatever the calling shell has set.
for name in ("KFAILD_LAB_BROKERS", "KFAILD_LAB_CONTROLLERS"):
    os.environ.pop(name, None)
sys.path.insert(0, str(LAB))


@pytest.fixture
def lab_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No KFAILD_LAB_* variable but KFAILD_LAB_DIR, a fresh state dir; yields that dir."""
    for name in list(os.environ):
        if name.startswith("KFAILD_LAB_"):
            monkeypatch.delenv(name)
    state = tmp_path / "state"
    monkeypatch.setenv("KFAILD_LAB_DIR", str(state))
    yield state
