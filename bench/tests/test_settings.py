"""bench/run-all's settings and command line."""

from pathlib import Path

import pytest

from kfaild_bench.cli import PARTS, parse_args, parser
from kfaild_bench.settings import DEFAULT_BUILD, Settings

BENCH = Path(__file__).resolve().parent.parent


def test_the_defaults():
    s = Settings.from_environ({"HOME": "/h"}, bench=Path("/repo/bench"))
    assert s.results == Path("/repo/bench/results")
    assert s.build == DEFAULT_BUILD
    assert s.work == Path("/tmp/kfaild-bench-work")
    assert s.bootstrap == "127.0.0.1:29091,127.0.0.1:29092,127.0.0.1:29093"
    assert s.bootstrap1 == "127.0.0.1:29291"
    assert s.lab1_env["KFAILD_LAB_BROKERS"] == "1"
    assert s.peer_suffix() == ""


def test_the_lab_is_the_top_level_lab_folder_s():
    s = Settings.from_environ({}, bench=BENCH)
    assert s.lab == BENCH.parent / "lab/lab"
    assert s.tools_log4j == BENCH.parent / "lab/tools-log4j2.yaml"


def test_the_environment_moves_results_build_and_labs():
    environ = {
        "KFAILD_BENCH_RESULTS": "/r",
        "KFAILD_BENCH_BUILD": "/b",
        "KFAILD_BENCH_LAB_PORT_BASE": "15000",
        "KFAILD_BENCH_LAB1_PORT_BASE": "16000",
        "KFAILD_BENCH_LAB_DIR": "/l",
        "KFAILD_CACHE": "/c",
        "KFAILD_KMINION_SRC": "/k",
        "OTHER": "x",
    }
    s = Settings.from_environ(environ, argv=["--parts", "outage"], peer_impl="cxx")
    assert (s.results, s.build, s.cache) == (Path("/r"), Path("/b"), Path("/c"))
    assert s.jars == Path("/c/kafka-4.3.1/libs")
    assert s.bootstrap == "127.0.0.1:15091,127.0.0.1:15092,127.0.0.1:15093"
    assert s.bootstrap1 == "127.0.0.1:16091"
    assert s.lab_env == {"KFAILD_LAB_PORT_BASE": "15000", "KFAILD_LAB_DIR": "/l"}
    assert s.kminion_src == "/k"
    assert s.invocation == "bench/run-all --parts outage"
    assert "KFAILD_BENCH_BUILD=/b" in s.bench_env
    assert not any(v.startswith(("OTHER", "KFAILD_CACHE")) for v in s.bench_env)
    assert s.peer_suffix() == "-cxx"


def test_settings_cannot_change_during_a_run():
    s = Settings.from_environ({})
    with pytest.raises(AttributeError):
        s.peer_impl = "cxx"


def test_lists_on_the_command_line_are_split():
    args = parse_args(
        parser(),
        ["--sizes", "3,30", "--probe-clients", "wire,librdkafka,", "--side-probe", "a=b=c",
         "--outages", "10", "--knob-variants", "default,wire client"],
    )  # fmt: skip
    assert args.sizes == [3, 30]
    assert args.probe_clients == ["wire", "librdkafka"]
    assert args.side_probe == {"a": "b=c"}
    assert args.outages == [10]
    assert args.knob_variants == ["default", "wire client"]
    assert args.kfaild_intervals == [20, 10, 5, 2, 1]
    assert args.store_sizes == [1_000_000, 10_000_000, 100_000_000]


def test_every_part_the_help_names_has_a_runner():
    assert set(PARTS) == {"store", "probe", "peer", "drill", "resolution", "outage",
                          "drill-reanalyse", "side", "peers", "idle", "knobs", "poll",
                          "secured"}  # fmt: skip
    assert PARTS["peers"] is PARTS["side"]
