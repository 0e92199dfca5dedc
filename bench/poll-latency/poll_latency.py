#!/usr/bin/env python3
"""Does a metadata poll on the probe's own producer wait behind its produce requests?

The question behind kfaild's client layout (docs/PERFORMANCE.md, "librdkafka clients per
cluster"): could the metadata poller ask for metadata on the probe producer's handle instead of
a client of its own? A Kafka broker handles the requests of one connection one at a time, and an
acks=all produce request waits at the leader until the ISR has the message; so during a kill drill
a metadata request sent on the producer's connection to a surviving leader may wait until the
dead follower is fenced.

One producer (acks=all, like the probe) sends one message to every partition every --interval-ms;
two pollers each ask for the topic's metadata every --poll-ms, one on that producer's handle
(`shared`), one on a client of its own (`own`). Each poll's latency goes to stdout as a JSON line
{"t_us", "client", "latency_ms", "error"}; at exit (SIGINT/SIGTERM or --duration) one summary line
{"kind": "summary", per client: polls, p50, p99, max latency, the longest stretch without an
answer}. Run it against a cluster and kill a follower of the topic's leaders meanwhile
(bench/run-all --parts poll does both).

Needs confluent-kafka; its Producer.list_topics is librdkafka's rd_kafka_metadata, which kfaild's
poller calls too (the broker-side queueing under test does not depend on the client version).
"""

import argparse
import json
import signal
import sys
import threading
import time

from confluent_kafka import Producer


def wall_us():
    return time.time_ns() // 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--interval-ms", type=float, default=20)
    ap.add_argument("--poll-ms", type=float, default=100)
    # kfaild's poller gives a poll 10 intervals and at least 1 s before it counts as failed.
    ap.add_argument("--timeout-s", type=float, default=1.0)
    ap.add_argument("--duration", type=float, default=0, help="seconds; 0: until a signal")
    args = ap.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    common = {
        "bootstrap.servers": args.bootstrap,
        "allow.auto.create.topics": False,
        "reconnect.backoff.max.ms": 1000,
    }
    producer = Producer(
        {
            **common,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 60000,
            "queue.buffering.max.messages": 10_000_000,
        }
    )
    own = Producer({**common, "client.id": "poll-latency-own"})
    out_lock = threading.Lock()
    results = {"shared": [], "own": []}

    def emit(obj):
        with out_lock:
            print(json.dumps(obj), flush=True)

    def poller(name, client):
        next_t = time.monotonic()
        while not stop.is_set():
            t0 = time.monotonic()
            error = None
            try:
                md = client.list_topics(args.topic, timeout=args.timeout_s)
                if args.topic not in md.topics:
                    error = "topic missing"
            except Exception as e:  # KafkaException: timeout, transport
                error = str(e)
            latency = (time.monotonic() - t0) * 1000
            results[name].append((wall_us(), latency, error))
            emit(
                {"t_us": wall_us(), "client": name, "latency_ms": round(latency, 2), "error": error}
            )
            next_t += args.poll_ms / 1000
            stop.wait(max(0.0, next_t - time.monotonic()))
            next_t = max(next_t, time.monotonic())

    def served():
        while not stop.is_set():
            producer.poll(0.1)

    threads = [
        threading.Thread(target=poller, args=("shared", producer), daemon=True),
        threading.Thread(target=poller, args=("own", own), daemon=True),
        threading.Thread(target=served, daemon=True),
    ]
    for t in threads:
        t.start()
    started = time.monotonic()
    next_tick = started
    payload = b"x" * 64
    while not stop.is_set():
        for p in range(args.partitions):
            try:
                producer.produce(args.topic, payload, partition=p)
            except BufferError:
                pass
        next_tick += args.interval_ms / 1000
        stop.wait(max(0.0, next_tick - time.monotonic()))
        if args.duration and time.monotonic() - started >= args.duration:
            stop.set()
    for t in threads:
        t.join(timeout=args.timeout_s + 1)
    summary = {"kind": "summary"}
    for name, rows in results.items():
        lat = sorted(r[1] for r in rows)
        if not lat:
            summary[name] = {"polls": 0}
            continue
        # The longest time without an answer: a poll's own latency plus the wait before it.
        summary[name] = {
            "polls": len(lat),
            "errors": sum(1 for r in rows if r[2]),
            "p50_ms": round(lat[len(lat) // 2], 2),
            "p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 2),
            "max_ms": round(lat[-1], 2),
        }
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
