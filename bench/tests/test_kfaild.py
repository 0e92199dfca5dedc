"""What bench/run-all reads from kfaild: its configuration, log, /metrics, API and database rows."""

import pytest

from kfaild_bench.kfaild import (
    binary_window,
    dropped_samples,
    kfaild_yaml,
    latency_totals_from_text,
    longest_stalls,
    phases,
    probe_counters,
    probe_partitions,
)


def test_the_three_broker_config_replicates_three_times_with_two_in_sync():
    y = kfaild_yaml("127.0.0.1:29091", "/tmp/x.db", "bench-p3", 3)
    assert "bootstrap: 127.0.0.1:29091\n" in y
    assert "partitions: 3\n            replication_factor: 3\n" in y
    assert 'min.insync.replicas: "2"' in y
    assert "interval_ms: 20\n" in y
    assert "http:" not in y
    assert "client:" not in y


def test_the_one_broker_config_with_every_option():
    y = kfaild_yaml(
        "127.0.0.1:29291",
        "/tmp/x.db",
        "side-kfaild-p30",
        30,
        interval_ms=5,
        http_port=0,
        one_broker=True,
        client={"linger.ms": "20"},
        probe_client="wire",
        probe_extra={"max_outstanding_ms": "10000"},
    )
    assert y.startswith("log_level: info\nstorage:\n  path: /tmp/x.db\nhttp:\n  port: 0\n")
    assert '    client:\n      linger.ms: "20"\n    probe:\n      client: wire\n' in y
    assert "      max_outstanding_ms: 10000\n      interval_ms: 5\n" in y
    assert "replication_factor: 1" in y
    assert 'min.insync.replicas: "1"' in y


def test_an_assignment_replaces_the_partition_count():
    y = kfaild_yaml("b:1", "/tmp/x.db", "orders", 3, assignment="1:2:3,2:3:1,3:1:2")
    assert 'replica_assignment: "1:2:3,2:3:1,3:1:2"' in y
    assert "partitions: 3" not in y


def point(t, cpu, acked, rss=1000):
    return {"t": t, "cpu": cpu, "rss_kb": rss, "acked": acked}


def test_the_binary_window_starts_a_second_before_the_warm_up_ends():
    # Status lines every 10 s from t=100; warm-up 20 s: the window is t=119 on, so 120..140.
    points = [point(100, 1.0, 0), point(110, 2.0, 500), point(120, 3.0, 1000),
              point(130, 3.5, 2000), point(140, 4.0, 3000, rss=2048)]  # fmt: skip
    w = binary_window(points, first_probing=100, warmup=20)
    assert w["window_s"] == 20
    assert w["acked"] == 2000
    assert w["cpu_s"] == 1.0
    assert w["cpu_cores"] == 0.05
    assert w["cpu_ms_per_1000_acked"] == 500  # 1,000 CPU-ms over 2,000 acked
    assert w["rss_kb"] == 2048


def test_the_binary_window_needs_two_status_lines():
    assert binary_window([point(100, 1.0, 0)], 100, 0) is None
    assert binary_window([], None, 20) is None


def test_nothing_acked_has_no_cpu_per_message():
    w = binary_window([point(0, 1.0, 5), point(10, 2.0, 5)], 0, 0)
    assert w["cpu_ms_per_1000_acked"] is None


def test_dropped_samples_come_from_the_last_stopped_line():
    log = "a\nkfaild stopped: 3 samples dropped\nb\nkfaild stopped: 7 samples dropped\n"
    assert dropped_samples(log) == 7
    assert dropped_samples("kfaild stopped: cleanly\n") is None
    assert dropped_samples("no such line\n") is None


def test_latency_totals_add_every_partitions_sum_and_count():
    text = "\n".join(
        [
            "# HELP kfaild_probe_ack_latency_seconds ...",
            'kfaild_probe_ack_latency_seconds_bucket{partition="0",le="0.01"} 3',
            'kfaild_probe_ack_latency_seconds_sum{partition="0"} 0.5',
            'kfaild_probe_ack_latency_seconds_sum{partition="1"} 0.25',
            'kfaild_probe_ack_latency_seconds_count{partition="0"} 100',
            'kfaild_probe_ack_latency_seconds_count{partition="1"} 50',
            'kfaild_probe_end_to_end_latency_seconds_sum{partition="0"} 2',
            'kfaild_probe_end_to_end_latency_seconds_count{partition="0"} 40',
        ]
    )
    totals = latency_totals_from_text(text)
    assert totals == {"ack": [0.75, 150.0], "end_to_end": [2.0, 40.0]}


def test_the_longest_stall_per_partition_and_kind_wins():
    rows = [
        ("orders", 0, "ack", 10, 20, 10),
        ("orders", 0, "ack", 30, 60, 30),
        ("orders", 0, "receive", 5, 15, 10),
        ("orders", 1, "ack", 0, 8, 8),
        ("orders", 0, "ack", 70, 80, 10),
    ]
    best = longest_stalls(rows)
    assert best == {
        "orders[0] ack": {"start_us": 30, "end_us": 60, "duration_us": 30},
        "orders[0] receive": {"start_us": 5, "end_us": 15, "duration_us": 10},
        "orders[1] ack": {"start_us": 0, "end_us": 8, "duration_us": 8},
    }


def test_phases_keep_the_first_time_of_each_event_in_ms_after_the_fault():
    fault = 1_000_000
    rows = [
        (1_500_000, "metadata", "broker_gone", None, "{}"),
        (1_600_000, "metadata", "broker_gone", None, "{}"),
        (2_000_000, "metadata", "leader_change", 0, "{}"),
        (2_100_000, "client", "client_leader_update", 0, '{"client": "producer"}'),
        (2_200_000, "client", "client_leader_update", 0, '{"client": "consumer"}'),
        (2_300_000, "client", "client_leader_update", 0, '{"client": "producer"}'),
        (2_400_000, "metadata", "leader_change", 0, "{}"),
    ]
    assert phases(rows, fault) == {
        "broker_gone_ms": 500,
        "0": {"metadata_new_leader_ms": 1000, "producer_applied_ms": 1100,
              "consumer_applied_ms": 1200},
    }  # fmt: skip


def test_probe_partitions_and_their_counters():
    detail = {
        "topics": [
            {"name": "other", "partitions": [{"partition": 0, "probe": {"acked": 99}}]},
            {
                "name": "bench",
                "partitions": [
                    {"partition": 0, "probe": {"acked": 10, "sent": 12, "lost": None}},
                    {"partition": 1, "probe": {"acked": 5, "sent": 5}},
                    {"partition": 2},
                ],
            },
        ]
    }
    parts = probe_partitions(detail, "bench")
    assert sorted(parts) == [0, 1]
    assert probe_counters(parts) == pytest.approx(
        {"sent": 17, "acked": 15, "send_failed": 0, "held_ticks": 0, "received": 0, "lost": 0}
    )
    assert probe_partitions(None, "bench") == {}
