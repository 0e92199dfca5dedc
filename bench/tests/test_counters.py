"""Counters read from other processes: KMinion's /metrics and a thread's /proc files."""

from kfaild_bench.common import add_thread
from kfaild_bench.kminion import counters_from_metrics


def test_kminion_s_acked_is_produced_less_failed_per_partition():
    text = "\n".join(
        [
            "# TYPE kminion_end_to_end_messages_produced_total counter",
            'kminion_end_to_end_messages_produced_total{partition_id="0"} 1000',
            'kminion_end_to_end_messages_produced_total{partition_id="1"} 998',
            'kminion_end_to_end_messages_produced_failed_total{partition_id="1"} 3',
            'kminion_end_to_end_messages_received_total{partition_id="0"} 999.6',
            'kminion_end_to_end_messages_lost_total{partition_id="1"} 2',
            'kminion_end_to_end_roundtrip_latency_seconds_count{partition_id="0"} 5',
        ]
    )
    c = counters_from_metrics(text)
    assert c["acked"] == {0: 1000, 1: 995}
    assert c["failed"] == {1: 3}
    assert c["received"] == {0: 1000}  # rounded
    assert c["lost"] == {1: 2}
    assert counters_from_metrics("") == {"acked": {}, "failed": {}, "received": {}, "lost": {}}


def stat(name, utime, stime):
    # /proc/<pid>/task/<tid>/stat: pid (comm) state, then fields; utime and stime are the 14th
    # and 15th fields of the line, the 12th and 13th after the name.
    after = ["S"] + ["0"] * 10 + [str(utime), str(stime)] + ["0"] * 10
    return f"123 ({name}) " + " ".join(after)


def test_threads_named_rdk_count_as_librdkafka_s_and_the_rest_as_own():
    out = {
        "librdkafka_cpu_s": 0.0,
        "own_cpu_s": 0.0,
        "threads": 0,
        "librdkafka_clients": 0,
        "librdkafka_wakeups": 0,
        "own_wakeups": 0,
    }
    status = "Name:\tx\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t7\n"
    add_thread(out, stat("rdk:main", 100, 50), status, 100)
    add_thread(out, stat("rdk:broker1", 10, 0), status, 100)
    # A name with a space and a parenthesis: the fields start after the last ')'.
    add_thread(out, stat("kfaild:send (x)", 30, 20), "voluntary_ctxt_switches:\t5\n", 100)
    assert out["threads"] == 3
    assert out["librdkafka_cpu_s"] == 1.6  # (150 + 10) ticks at 100 per second
    assert out["own_cpu_s"] == 0.5
    assert out["librdkafka_clients"] == 1
    assert out["librdkafka_wakeups"] == 80
    assert out["own_wakeups"] == 5
