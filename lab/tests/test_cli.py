"""The `lab` command line, run as a process: the node ids follow KFAILD_LAB_CONTROLLERS and
KFAILD_LAB_BROKERS, and the exit codes are 0, 1 (a failure) and 2 (bad usage)."""

import json
import os
import subprocess
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent / "lab"


def run(state: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KFAILD_LAB_")}
    # A port base no other lab uses, so that `status` finds no node of anyone's.
    clean |= {"KFAILD_LAB_DIR": str(state), "KFAILD_LAB_PORT_BASE": "1100"} | env
    return subprocess.run([str(LAB), *args], env=clean, capture_output=True, text=True, timeout=30)


def test_status_json_lists_every_node_of_the_lab_as_stopped(tmp_path: Path) -> None:
    r = run(tmp_path, "status", "--json", KFAILD_LAB_CONTROLLERS="3", KFAILD_LAB_BROKERS="2")
    assert r.returncode == 0, r.stderr
    status = json.loads(r.stdout)
    assert [n["node"] for n in status["nodes"]] == [100, 101, 102, 1, 2]
    assert not any(n["alive"] for n in status["nodes"])
    assert status["bootstrap"] == "127.0.0.1:1191,127.0.0.1:1192"
    assert status["nodes"][0]["pid_file"] == str(tmp_path / "node100" / "kafka.pid")


def test_a_node_the_lab_does_not_have_is_a_usage_error(tmp_path: Path) -> None:
    r = run(tmp_path, "pidfile", "101")
    assert r.returncode == 2
    assert "unknown node id '101' (nodes: 100, 1, 2, 3)" in r.stderr
    assert run(tmp_path, "pidfile", "101", KFAILD_LAB_CONTROLLERS="3").returncode == 0


def test_a_bad_count_stops_the_lab_before_any_verb(tmp_path: Path) -> None:
    r = run(tmp_path, "bootstrap", KFAILD_LAB_BROKERS="4")
    assert r.returncode == 1
    assert r.stderr.strip() == "lab: KFAILD_LAB_BROKERS='4' is not 1, 2 or 3"


def test_a_container_name_carries_a_port_base_other_than_the_default(tmp_path: Path) -> None:
    assert run(tmp_path, "container", "1").stdout.strip() == "kfaild-lab1100-k1"
    default = run(tmp_path, "container", "100", KFAILD_LAB_PORT_BASE="19000")
    assert default.stdout.strip() == "kfaild-lab-c100"


def test_killing_a_node_that_does_not_run_is_a_no_op(tmp_path: Path) -> None:
    r = run(tmp_path, "kill", "2")
    assert (r.returncode, r.stdout.strip()) == (0, "node 2 is not running")


def test_start_without_a_lab_brought_up_says_to_run_up(tmp_path: Path) -> None:
    r = run(tmp_path, "start", "1")
    assert r.returncode == 1
    assert "never brought up in this state dir; run `lab up`" in r.stderr
