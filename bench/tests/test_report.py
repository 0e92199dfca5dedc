"""bench/report.py's numbers: formatting, medians and ranges, the drill comparisons, and the
figures its sections derive from the results."""

import pytest

import report
from kfaild_bench.build import main_cc_flags


def test_numbers_are_grouped_and_rounded():
    assert report.f(None) == "–"
    assert report.f(1234567) == "1,234,567"
    assert report.f(0.12345, 3) == "0.123"
    assert report.f(1234.5) == "1,234"  # four digits and up lose their decimal at digits 1
    assert report.f(1234.5, 2) == "1,234.50"
    assert report.f(3 * 2**30, 2, 2**30) == "3.00"  # bytes shown as GiB
    assert report.f(1500, 1, 1000) == "1.5"


def test_load_averages_and_commands():
    assert report.la({"load_before": [1.234, 0.5, 0.0]}) == "1.23/0.50/0.00"
    assert report.la({"load_at_kill": [2, 1, 0]}, "load_at_kill") == "2.00/1.00/0.00"
    assert report.la({}) == "–"
    assert report.la(None) == "–"
    assert report.cmd("a b") == "`a b`"
    assert report.cmd(None) == "–"


def test_medians_and_ranges_leave_out_missing_values():
    assert report.median([5, None, 1, 3]) == 3
    assert report.median([None]) is None
    assert report.rng([3.0, None, 1.0, 2.0]) == "2.0 (1.0–3.0)"
    assert report.rng([None]) == "–"


def drill(kfaild_ack, peer_ack, kfaild_gap=None, peer_gap=None):
    return {
        "kfaild": {"orders[1] ack": kfaild_ack},
        "peer": [{"partition": 1, "ack": peer_ack,
                  "sending": None if peer_gap is None else {"largest_send_gap_us": peer_gap}}],
        "kfaild_sending": {} if kfaild_gap is None else {"1": {"largest_send_gap_us": kfaild_gap}},
    }  # fmt: skip


def test_stall_edges_are_kfaild_minus_the_peer_at_each_end():
    dr = drill(
        {"start_us": 1_000, "end_us": 9_000},
        {"stall_start_us": 1_500, "stall_end_us": 8_800},
    )
    assert report.stall_edges(dr, 1, "ack") == (-500, 200)
    assert report.stall_edges(dr, 1, "receive") == (None, None)
    assert report.stall_edges(dr, 0, "ack") == (None, None)
    partial = drill({"start_us": 1, "end_us": 2}, {"stall_start_us": None, "stall_end_us": 3})
    assert report.stall_edges(partial, 1, "ack") == (None, None)


def test_a_send_pause_over_30_ms_makes_the_stall_start_the_probe_s_own():
    ack = {"start_us": 0, "end_us": 1}
    peer_ack = {"stall_start_us": 0, "stall_end_us": 1}
    assert report.sending(drill(ack, peer_ack, 20_000, 30_000), 1) == (20_000, 30_000, [])
    assert report.sending(drill(ack, peer_ack, 30_001, 45_000), 1) == (
        30_001,
        45_000,
        ["kfaild", "probe.py"],
    )
    assert report.sending(drill(ack, peer_ack), 1) == (None, None, [])


def test_wakeups_per_acked_message():
    assert report._wakeups_per_acked({"librdkafka_wakeups_per_s": 50, "acked": 1000}, 40) == 2
    assert report._wakeups_per_acked({"acked": 1000}, 40) is None
    assert report._wakeups_per_acked({"librdkafka_wakeups_per_s": 50, "acked": 0}, 40) is None


def test_the_build_s_flags_are_the_recorded_ones():
    assert report.build_flags({"machine": {"cxx_flags": "-O2 -g1"}}) == "-O2 -g1"
    assert report.build_flags({"machine": {}}) is None
    assert report.built({"machine": {"kfaild_commit": "abc1234", "cxx_flags": "-O2 -g1"}}) == (
        "commit `abc1234`, `-O2 -g1`"
    )
    assert report.built(None) == "commit not recorded"


def test_run_all_records_main_cc_s_optimisation_and_debug_flags():
    commands = [
        {"file": "/src/server/other.cc", "command": "c++ -O3 -c other.cc"},
        {"file": "/src/server/main.cc",
         "command": "c++ -DFOO -I/x -O2 -g1 -DNDEBUG -march=native -Wall -c main.cc"},
    ]  # fmt: skip
    assert main_cc_flags(commands) == "-O2 -g1 -DNDEBUG -march=native"
    args = [{"file": "server/main.cc", "arguments": ["c++", "-Wall", "-c", "main.cc"]}]
    assert main_cc_flags(args) is None
    assert main_cc_flags([]) is None


def test_the_resolution_section_computes_rate_share_and_the_smallest_sustained_interval():
    d = {
        "partitions": 100,
        "load_source": "one-broker lab, RF 1",
        "kfaild": [
            {"interval_ms": 5, "acked": 600_000, "expected": 600_000, "ticks": 5998,
             "skipped_ticks": 2, "sustained": False},
            {"interval_ms": 20, "acked": 150_000, "expected": 150_000, "ticks": 1500,
             "skipped_ticks": 0, "sustained": True},
            {"interval_ms": 10, "acked": 297_000, "expected": 300_000, "ticks": 3000,
             "skipped_ticks": 0, "sustained": True},
        ],
        "peer": [],
    }  # fmt: skip
    out = "\n".join(report.resolution_section(d))
    # 100 partitions at 5 ms: 20,000 msg/s; 2 skipped of 6,000 ticks: 0.033 %.
    assert "| kfaild | 5 | – | 20,000 | 1.000 | 2 | 0.033 % |" in out
    assert "| kfaild | 10 | – | 10,000 | 0.990 | 0 | 0.000 % |" in out
    assert "Smallest sustained interval: **kfaild 10 ms**." in out


def test_nothing_sustained_is_said_so():
    d = {"partitions": 100, "kfaild": [], "peer": []}
    out = "\n".join(report.resolution_section(d))
    assert "**none of the intervals tried, for either probe, on this machine**" in out


def test_the_probe_section_divides_the_peer_s_cost_by_kfaild_s():
    def run(cpu_ms):
        return {"cpu_ms_per_1000_acked": cpu_ms, "acked": 2900, "expected": 3000}

    probe = {
        "load_source": "one-broker lab, RF 1",
        "runs": [{"partitions": 3, "probe_bench": run(2.0), "binary": run(2.5)}],
    }
    peer = {"load_source": "one-broker lab, RF 1", "runs": [{"partitions": 3, "peer": run(9.0)}]}
    out = "\n".join(report.probe_section(probe, peer))
    assert "| 3 | 2.0 | 9.0 | 4.5× | 0.967 |" in out


def test_the_probe_section_refuses_a_ratio_across_load_sources():
    probe = {"load_source": "one-broker lab, RF 1", "runs": []}
    peer = {"runs": []}
    out = "\n".join(report.probe_section(probe, peer))
    assert "Not computed" in out


@pytest.mark.parametrize("n", [0, 1])
def test_an_empty_section_says_how_to_run_it(n):
    section = [report.store_section, report.resolution_section][n]
    assert "Not run yet" in "\n".join(section(None))
