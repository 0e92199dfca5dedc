"""The arithmetic of bench/run-all on small hand-made inputs whose answers are known."""

import pytest

from kfaild_bench.stats import (
    e2e_summary,
    jitter_from_csv,
    latency_stats,
    median,
    perf_summary,
    spacing,
)


def test_the_median_leaves_out_missing_values():
    assert median([3, None, 1, 2]) == 2
    assert median([4, 1, None, 2, 3]) == 2.5
    assert median([None]) is None
    assert median([]) is None


def test_spacing_pools_each_partitions_intervals():
    # Partition 0 every 20 µs, partition 1 at 10 and 30 µs apart: differences 20, 20, 10, 30.
    rows = [(0, 0), (1, 5), (0, 20), (1, 15), (0, 40), (1, 45)]
    s = spacing(rows)
    assert s["n"] == 4
    assert s["mean_us"] == 20
    # Deviations 0, 0, 10, 10: variance 50.
    assert s["stddev_us"] == pytest.approx(50**0.5)
    assert s["p99_abs_dev_us"] == 10
    assert (s["min_us"], s["max_us"]) == (10, 30)


def test_spacing_needs_two_intervals():
    assert spacing([(0, 0), (0, 20)]) is None
    assert spacing([(0, 0), (1, 0), (2, 0)]) is None


def test_jitter_from_csv_reads_sends_from_a_time_on(tmp_path):
    csv = tmp_path / "peer.csv"
    csv.write_text(
        "partition,seq,send_us,ack_us,error\n"
        "0,1,100,150,\n"
        "0,2,1000,1050,\n"
        "1,1,1005,1070,\n"
        "0,3,1020,1080,\n"
        "1,2,1035,1090,\n"
        "0,4,1040,1100,\n"
    )
    s = jitter_from_csv(csv, since_us=1000)
    # Partition 0: 1000, 1020, 1040 (the send at 100 is before since_us); partition 1: 1005, 1035.
    assert s["n"] == 3
    assert s["mean_us"] == pytest.approx(70 / 3)
    assert (s["min_us"], s["max_us"]) == (20, 30)


def test_e2e_summary_finds_the_stall_across_the_fault():
    fault = 10_000_000
    lines = [
        (8_000_000, "0\t1.5"),
        (8_500_000, "1000\t2.0"),
        (9_000_000, "2000\t1.0"),
        (9_500_000, "3000\t1.2"),
        (13_500_000, "4000\t4000.0"),  # the stall: 4 s without a progress line
        (14_000_000, "5000\t1.1"),
        (14_100_000, "Avg latency: 3.1 ms"),
        (14_100_001, "Percentiles: 50th = 1, 99th = 9"),
        (14_100_002, "something else"),
    ]
    e = e2e_summary(lines, fault)
    assert e["progress_lines"] == 6
    assert e["longest_line_interval_us"] == 4_000_000
    # Intervals ending more than 1 s before the fault: 0.5 s and 0.5 s.
    assert e["normal_line_interval_us"] == 500_000
    assert e["max_latency_ms_printed"] == 4000.0
    assert e["summary"] == ["Avg latency: 3.1 ms", "Percentiles: 50th = 1, 99th = 9"]


def test_e2e_summary_of_no_output():
    e = e2e_summary([], 0)
    assert e["progress_lines"] == 0
    assert e["longest_line_interval_us"] is None
    assert e["normal_line_interval_us"] is None
    assert e["max_latency_ms_printed"] == 0


def perf_line(records, avg, peak):
    return (
        f"{records} records sent, 50.0 records/sec (0.00 MB/sec), {avg} ms avg latency, "
        f"{peak} ms max latency."
    )


def test_perf_summary_splits_windows_at_the_fault():
    fault = 20_000_000
    lines = [
        (5_000_000, perf_line(250, 3.0, 90.0)),  # the first window (start-up) is left out
        (10_000_000, perf_line(250, 2.0, 12.0)),
        (15_000_000, perf_line(250, 2.5, 15.0)),
        (25_000_000, perf_line(100, 900.0, 9100.0)),
        (30_000_000, perf_line(250, 2.0, 11.0)),
        (85_000_000, perf_line(250, 2.0, 99999.0)),  # more than 60 s after the fault
        (86_000_000, "10000 records sent, 99.9th = 12 ms"),
    ]
    p = perf_summary(lines, fault)
    assert p["windows"] == 6
    assert p["max_latency_ms_around_fault"] == 9100.0
    assert p["max_latency_ms_before_fault"] == 15.0
    assert len(p["lines_around_fault"]) == 2
    assert p["final"] == ["10000 records sent, 99.9th = 12 ms"]


def test_latency_percentiles_are_taken_at_q_times_n():
    # Ten messages, latencies 1..10 ms, one tick each 20 ms apart.
    msgs = [(i * 20_000, i * 20_000 + (i + 1) * 1000) for i in range(10)]
    s = latency_stats(msgs)
    assert s["n"] == 10
    assert s["p50_ms"] == 6  # index 5 of the sorted latencies
    assert s["p90_ms"] == 10  # index 9
    assert s["p99_ms"] == 10  # index 9 (9.9 truncated)
    assert s["mean_ms"] == 5.5


def test_latency_ticks_group_sends_less_than_5_ms_apart():
    # Two ticks of three partitions (sends 1 ms apart), one tick that reached only two.
    msgs = [
        (0, 3000), (1000, 5000), (2000, 4000),  # first ack 2 ms, last 4 ms
        (20_000, 21_000), (21_000, 27_000), (22_000, 25_000),  # 1 ms and 6 ms
        (40_000, 41_000), (41_000, 60_000),  # two partitions only: not a full tick
    ]  # fmt: skip
    s = latency_stats(msgs)
    assert s["ticks"] == 2
    # Medians of two values: the upper one (index len // 2).
    assert s["tick_first_p50_ms"] == 2
    assert s["tick_last_p50_ms"] == 6


def test_latency_of_nothing_is_none():
    assert latency_stats([]) is None
