"""The figures each part derives from what it sampled, on hand-made samples."""

import argparse
from pathlib import Path

import pytest

from kfaild_bench.lab import kill_time_us
from kfaild_bench.parts.drill import agreement, drill_result_name
from kfaild_bench.parts.idle import idle_figures
from kfaild_bench.parts.knobs import knob_figures
from kfaild_bench.parts.outage import (
    flowing,
    longest_gap_of,
    probe_steady,
    timeline_row,
    writable,
)
from kfaild_bench.parts.poll import poll_summary
from kfaild_bench.parts.side import peer_acks, side_key, window
from kfaild_bench.parts.store import growth_mode
from kfaild_bench.results import merge_runs
from kfaild_bench.settings import Settings


def proc(cpu, rdk=0.0, own=0.0, rdk_wakeups=0, own_wakeups=0, rss=1024, threads=10, clients=3):
    return {
        "cpu_s": cpu,
        "librdkafka_cpu_s": rdk,
        "own_cpu_s": own,
        "librdkafka_wakeups": rdk_wakeups,
        "own_wakeups": own_wakeups,
        "rss_kb": rss,
        "threads": threads,
        "librdkafka_clients": clients,
    }


def moment(t_us, kfaild, peer, kminion, lab_cpu, load=(1.0, 1.0, 1.0)):
    return {"t_us": t_us, "kfaild": kfaild, "peer": peer, "kminion": kminion,
            "lab_cpu_s": lab_cpu, "load": list(load)}  # fmt: skip


def test_the_side_window_gives_cpu_per_1000_acked_and_the_ratios():
    # 10 partitions at 20 ms for 10 s: 5,000 messages expected of each probe.
    a = moment(
        0,
        {**proc(1.0, rdk=0.5, own=0.5), "acked": 0, "held_ticks": 2},
        {**proc(3.0), "status": {"t_us": 0, "acked": 0, "cpu_s": 3.0, "skipped": 1}},
        {**proc(2.0), "acked": 0, "failed": 0, "received": 0, "lost": 0},
        lab_cpu=10.0,
    )
    b = moment(
        10_000_000,
        {**proc(2.0, rdk=1.2, own=0.8, rdk_wakeups=5000), "acked": 5000, "held_ticks": 2},
        {**proc(7.0), "status": {"t_us": 10_000_000, "acked": 4000, "cpu_s": 7.0, "skipped": 3}},
        {**proc(5.0), "acked": 5000, "failed": 1, "received": 4990, "lost": 2},
        lab_cpu=15.0,
    )
    w = window(10, a, b, [])
    assert w["window_s"] == 10
    assert w["expected_per_probe"] == 5000
    assert w["lab_cpu_cores"] == 0.5
    k = w["kfaild"]
    assert k["cpu_s"] == 1.0
    assert k["cpu_cores"] == 0.1
    assert k["librdkafka_cpu_s"] == pytest.approx(0.7)
    assert k["librdkafka_wakeups_per_s"] == 500
    assert k["held_ticks"] == 0
    assert k["acked_fraction"] == 1.0
    assert k["cpu_ms_per_1000_acked"] == 200  # 1,000 CPU-ms over 5,000 acked
    p = w["peer"]
    assert p["acked"] == 4000
    assert p["skipped_ticks"] == 2
    assert p["acked_fraction"] == 0.8
    assert p["cpu_ms_per_1000_acked"] == 1000  # 4 CPU-s over 4,000 acked
    m = w["kminion"]
    assert (m["acked"], m["failed"], m["received"], m["lost"]) == (5000, 1, 4990, 2)
    assert m["cpu_ms_per_1000_acked"] == 600
    assert w["ratio_peer_over_kfaild"] == 5
    assert w["ratio_kminion_over_kfaild"] == 3
    assert "e2e" not in w


def test_the_side_window_reads_end_to_end_latency_printed_inside_it():
    a = moment(
        1_000_000,
        {**proc(0.0), "acked": 0},
        {**proc(0.0), "status": None},
        {**proc(0.0), "acked": 0, "failed": 0, "received": 0, "lost": 0},
        lab_cpu=0.0,
    )
    b = {**a, "t_us": 3_000_000, "kfaild": {**proc(0.0), "acked": 0}}
    a["e2e"] = {**proc(1.0), "progress_lines": 2}
    b["e2e"] = {**proc(2.0), "progress_lines": 5}
    lines = [(500_000, "1000\t99.0"), (1_500_000, "2000\t2.0"), (2_500_000, "3000\t4.0"),
             (2_600_000, "not progress"), (3_500_000, "4000\t50.0")]  # fmt: skip
    w = window(1, a, b, lines)
    e = w["e2e"]
    assert e["messages_approx"] == 3000
    assert e["latency_ms_printed_median"] == 3.0
    assert e["latency_ms_printed_max"] == 4.0
    assert e["latencies_printed"] == 2
    assert "peer" not in w  # no status lines: no peer figures
    assert w["kfaild"]["cpu_ms_per_1000_acked"] is None
    assert w["ratio_peer_over_kfaild"] is None


def test_peer_acks_keep_acked_messages_sent_in_the_window():
    lines = [
        "0,1,100,150,\n",  # before the window
        "0,2,200,260,0\n",
        "1,1,210,300,None\n",
        "1,2,220,,\n",  # never acked
        "0,3,230,290,7\n",  # acked with an error
        "1,3,240\n",  # a torn last line
        "0,4,300,350,\n",  # at the window's end: out
    ]
    assert peer_acks(lines, (200, 300)) == [(200, 260), (210, 300)]


def test_poll_summary_around_a_fault():
    fault = 100_000_000
    polls = [
        {"t_us": 90_000_000, "latency_ms": 2.0, "error": None},
        {"t_us": 95_000_000, "latency_ms": 4.0, "error": None},
        # Sent at the fault, answered 3 s later.
        {"t_us": 103_000_000, "latency_ms": 3000.0, "error": None},
        # Sent 1 s after the fault, timed out 5 s later.
        {"t_us": 106_000_000, "latency_ms": 5000.0, "error": "timeout"},
        {"t_us": 108_000_000, "latency_ms": 1.0, "error": None},
        {"t_us": 130_000_000, "latency_ms": 1.0, "error": None},
    ]
    s = poll_summary(polls, fault)
    assert s["before_fault_max_ms"] == 4.0
    assert s["before_fault_median_ms"] == 3.0
    assert s["polls_after_fault"] == 3
    assert s["after_fault_max_ms"] == 5000.0
    assert s["after_fault_median_ms"] == 3000.0
    assert s["failed_after_fault"] == 1
    # Answers at 90, 95, 103, 108 and 130 s (the timeout is none): of the silences that end after
    # the fault and start within 20 s of it (95-103, 103-108, 108-130), the longest is 22 s.
    assert s["longest_without_answer_ms"] == 22_000


def test_knob_figures_per_second_and_per_message():
    a = proc(10.0, rdk=6.0, own=4.0, rdk_wakeups=100, own_wakeups=50)
    b = proc(13.0, rdk=8.0, own=5.0, rdk_wakeups=2100, own_wakeups=250, rss=4096)
    la = {"ack": [1.0, 100.0], "end_to_end": [2.0, 100.0]}
    lb = {"ack": [1.5, 200.0], "end_to_end": [2.0, 100.0]}
    figures, means = knob_figures(100, a, b, la, lb, {"acked": 0}, {"acked": 5000}, 10.0)
    assert figures["cpu_cores"] == 0.3
    assert figures["librdkafka_cores"] == 0.2
    assert figures["own_cores"] == 0.1
    assert figures["librdkafka_wakeups_per_s"] == 200
    assert figures["own_wakeups_per_s"] == 20
    assert figures["acked_fraction"] == 0.1  # 100 partitions × 50/s × 10 s = 50,000 expected
    assert figures["cpu_ms_per_1000_acked"] == 600
    assert means == {"ack_latency_mean_ms": 5.0, "end_to_end_latency_mean_ms": None}


def test_idle_figures_are_cpu_milliseconds_per_second():
    a, b = proc(1.0, rdk=0.4, own=0.6), proc(1.6, rdk=0.5, own=1.1, threads=12)
    f = idle_figures(a, b, 60.0)
    assert f["cpu_ms_per_s"] == pytest.approx(10)
    assert f["librdkafka_cpu_ms_per_s"] == pytest.approx(100 / 60)
    assert f["own_cpu_ms_per_s"] == pytest.approx(500 / 60)
    assert f["threads"] == 12


def part(ack_gap, receive_gap, oldest=None, holding=None, **counters):
    return {
        "current_ack_gap_seconds": ack_gap,
        "current_receive_gap_seconds": receive_gap,
        "oldest_outstanding_age_seconds": oldest,
        "holding_since_us": holding,
        **counters,
    }


def test_the_probe_is_steady_when_every_check_passes_on_all_three_partitions():
    steady = {p: part(0.1, 0.2) for p in range(3)}
    assert probe_steady(steady)
    assert flowing(steady, "current_ack_gap_seconds")
    assert not probe_steady({0: part(0.1, 0.2), 1: part(0.1, 0.2)})
    assert not probe_steady({**steady, 2: part(0.6, 0.2)})  # no ack for 0.6 s
    assert not probe_steady({**steady, 2: part(0.1, 0.2, oldest=1.5)})
    assert not probe_steady({**steady, 2: part(0.1, 0.2, holding=123)})
    assert not probe_steady({**steady, 2: part(0.1, None)})
    assert flowing({**steady, 2: part(0.9, None)}, "current_ack_gap_seconds")
    assert not flowing({**steady, 2: part(1.0, 0.2)}, "current_ack_gap_seconds")


def test_writable_needs_a_fresh_snapshot_with_leaders_and_two_in_sync():
    def detail(at_us, isrs, leader=1):
        return {
            "metadata": {"at_us": at_us},
            "topics": [{"name": "t", "partitions": [
                {"partition": i, "leader": leader, "isr": isr} for i, isr in enumerate(isrs)]}],
        }  # fmt: skip

    assert writable(detail(200, [[1, 2], [2, 3], [1, 2, 3]]), "t", since_us=100)
    assert not writable(detail(50, [[1, 2], [2, 3], [1, 2, 3]]), "t", since_us=100)
    assert not writable(detail(200, [[1, 2], [2], [1, 2, 3]]), "t", since_us=100)
    assert not writable(detail(200, [[1, 2], [2, 3], [1, 3]], leader=-1), "t", since_us=100)
    assert not writable(detail(200, [[1, 2], [2, 3], [1, 3]]), "other", since_us=100)
    assert not writable(None, "t", since_us=0)


def test_a_timeline_row_takes_the_worst_gaps_and_the_sums():
    parts = {
        0: part(0.1234, 0.5, oldest=0.2, outstanding=3, held_ticks=1, acked=10, received=9),
        1: part(2.5, None, holding=77, outstanding=2, send_failed=4, acked=5, received=5),
    }
    assert timeline_row(12.345, parts) == [12.3, 2.5, 0.5, 0.2, 1, 5, 1, 4, 15, 14]


def test_the_longest_gap_after_the_kill():
    gaps = [
        {"topic": "t", "partition": 0, "start_us": 0, "end_us": 900, "duration_us": 900},
        {"topic": "t", "partition": 1, "start_us": 1500, "end_us": 4500, "duration_us": 3000},
        {"topic": "t", "partition": 2, "start_us": 1000, "end_us": 2000, "duration_us": 1000},
    ]
    g = longest_gap_of(gaps, since_us=1000)
    assert g == {"topic": "t", "partition": 1, "duration_s": 0.003, "start_after_kill_s": 0.0005,
                 "end_after_kill_s": 0.0035, "gaps_after_kill": 2}  # fmt: skip
    assert longest_gap_of(gaps, since_us=10_000) is None


def test_drill_agreement_is_kfaild_minus_the_peer():
    peer = [
        {"partition": 0, "ack": {"stall_us": 9_000_000}, "receive": {"stall_us": None}},
        {"partition": 1, "ack": {"stall_us": 100}, "receive": {"stall_us": 200}},
    ]
    stalls = {
        "orders[0] ack": {"duration_us": 9_010_000},
        "orders[0] receive": {"duration_us": 5},
        "orders[1] ack": {"duration_us": 90},
    }
    assert agreement(peer, stalls, "orders") == [
        {"partition": 0, "kind": "ack", "kfaild_us": 9_010_000, "peer_us": 9_000_000,
         "diff_us": 10_000},
        {"partition": 0, "kind": "receive", "kfaild_us": 5, "peer_us": None, "diff_us": None},
        {"partition": 1, "kind": "ack", "kfaild_us": 90, "peer_us": 100, "diff_us": -10},
        {"partition": 1, "kind": "receive", "kfaild_us": None, "peer_us": 200, "diff_us": None},
    ]  # fmt: skip


def settings(**kw):
    return Settings.from_environ({}, bench=Path("/repo/bench"), **kw)


def test_drill_results_are_named_after_how_they_ran():
    def name(client, alone=False, settle=None, impl="python"):
        args = argparse.Namespace(
            probe_clients=[client], drill_without_tools=alone, drill_settle_load=settle
        )
        return drill_result_name(settings(peer_impl=impl), args)

    assert name("librdkafka") == "drill"
    assert name("wire") == "drill-wire"
    assert name("wire", alone=True, settle=2.5, impl="cxx") == "drill-wire-alone-settled-cxx"


def test_side_keys_sort_by_size_and_carry_the_run_s_differences():
    args = argparse.Namespace(
        peer_linger_ms=0.0, side_without_e2e=True, side_settle_load=3.0,
        side_probe={"max_outstanding_ms": "10000"},
    )  # fmt: skip
    key = side_key(settings(peer_impl="cxx"), args, 30, "wire", 1)
    assert key == "00030-wire-linger0-no-e2e-settled-max_outstanding_ms10000-cxx-1"
    plain = argparse.Namespace(
        peer_linger_ms=None, side_without_e2e=False, side_settle_load=None, side_probe={}
    )
    assert side_key(settings(), plain, 300, "librdkafka", 0) == "00300-librdkafka-0"


def test_growth_goes_direct_when_the_writer_would_take_over_15_minutes():
    assert growth_mode("writer", 10, 10**9) == "writer"
    assert growth_mode("auto", None, 10**9) == "writer"  # no rate measured yet
    assert growth_mode("auto", 100_000, 90_000_000) == "writer"  # 900 s exactly
    assert growth_mode("auto", 100_000, 90_000_001) == "direct"


def test_rerun_entries_replace_the_earlier_ones_by_key():
    old = {3: {"n": 3, "v": "old"}, 100: {"n": 100, "v": "old"}}
    new = [{"n": 1000, "v": "new"}, {"n": 3, "v": "new"}]
    assert merge_runs(old, new, "n") == [
        {"n": 3, "v": "new"},
        {"n": 100, "v": "old"},
        {"n": 1000, "v": "new"},
    ]


def test_the_kill_time_is_the_labs_or_the_request():
    assert kill_time_us("SIGKILL sent at 1970-01-01T00:00:01.5+00:00\n", 7) == 1_500_000
    assert kill_time_us("SIGKILL sent at 1970-01-01T01:00:02+01:00", 7) == 2_000_000
    assert kill_time_us("no time printed", 7) == 7
