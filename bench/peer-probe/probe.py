#!/usr/bin/env python3
"""The broker-failure article's method, as a peer for kfaild's benchmarks.

One producer (acks=all) sends one message to every partition of a topic every interval; one
consumer in the same process, assigned to those partitions from their current end, reads them
back. Every message's send, ack and receive times (wall clock, µs) go to a CSV file, one row per
message:

    partition,seq,send_us,ack_us,ack_error,receive_us

A row is written once the message was both acked and received, or at exit with the empty fields
it still has. `gaps.py` finds the longest gap per partition around a fault time in that file.

At exit it prints one JSON line on stdout with what it did in the measurement window (after
--warmup): acked messages, CPU seconds (getrusage), RSS, ticks, skipped ticks and the worst send
lateness, so it can be compared with kfaild's probe_bench.

Needs confluent-kafka (PyPI). Written for kfaild's benchmarks from the article's description;
not the article's code.
"""

import argparse
import json
import os
import resource
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

MAGIC = b"pp1"


def wall_us():
    return time.time_ns() // 1000


def mono_us():
    return time.monotonic_ns() // 1000


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_kb(key="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def ensure_topic(bootstrap, topic, partitions, replication_factor, min_isr):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=10)
    if topic in md.topics and not md.topics[topic].error:
        return len(md.topics[topic].partitions)
    if partitions <= 0:
        raise RuntimeError(f"topic {topic} does not exist and --create-partitions is not set")
    # (A replica assignment is not offered: confluent-kafka 2.16.1 refuses every NewTopic with
    # one, "Specifying a default partition count and a replica assignment are mutually
    # exclusive"; bench/run-all creates such topics with Kafka's TopicCommand.)
    config = {"min.insync.replicas": str(min_isr)} if min_isr else {}
    new = NewTopic(
        topic, num_partitions=partitions, replication_factor=replication_factor, config=config
    )
    for _, future in admin.create_topics([new], request_timeout=30).items():
        try:
            future.result()
        except Exception as e:  # another probe created it meanwhile
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=topic, timeout=10)
        t = md.topics.get(topic)
        if t is not None and not t.error and t.partitions:
            return len(t.partitions)
        time.sleep(0.2)
    raise RuntimeError(f"topic {topic} not in metadata after creation")


class Probe:
    def __init__(self, args):
        self.args = args
        self.interval_us = int(args.interval_ms * 1000)
        self.run = os.urandom(4).hex().encode()
        self.lock = threading.Lock()
        # (partition, seq) -> [send_us, ack_us, ack_error, receive_us]
        self.pending = {}
        self.csv = open(args.csv, "w", buffering=1 << 20) if args.csv else None
        if self.csv:
            self.csv.write("partition,seq,send_us,ack_us,ack_error,receive_us\n")
        self.acked = 0
        self.failed = 0
        self.received = 0
        self.ticks = 0
        self.skipped = 0
        self.max_late_us = 0
        self.stop = threading.Event()
        common = {"bootstrap.servers": args.bootstrap}
        producer = {**common, "acks": "all", "client.id": "peer-probe"}
        if args.linger_ms is not None:
            producer["linger.ms"] = args.linger_ms
        self.producer = Producer(producer)
        self.consumer = Consumer(
            {
                **common,
                "group.id": "peer-probe-" + self.run.decode(),
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
                "client.id": "peer-probe-consumer",
            }
        )

    def finish(self, key, rec):
        # Called with self.lock held once a message is both acked and received.
        del self.pending[key]
        if self.csv:
            self.csv.write(f"{key[0]},{key[1]},{rec[0]},{rec[1]},{rec[2]},{rec[3]}\n")

    def on_delivery(self, err, msg):
        now = wall_us()
        value = msg.value()
        parts = value.split(b":", 4)
        key = (msg.partition(), int(parts[2]))
        with self.lock:
            rec = self.pending.get(key)
            if rec is None:
                return
            rec[1] = now
            if err is not None:
                rec[2] = err.code()
                self.failed += 1
            else:
                self.acked += 1
            if rec[3] is not None:
                self.finish(key, rec)

    def consume_loop(self):
        while not self.stop.is_set():
            msgs = self.consumer.consume(num_messages=1000, timeout=0.1)
            if not msgs:
                continue
            now = wall_us()
            with self.lock:
                for m in msgs:
                    if m.error() is not None:
                        continue
                    parts = m.value().split(b":", 4)
                    if parts[0] != MAGIC or parts[1] != self.run:
                        continue  # another probe's message on a shared topic
                    key = (m.partition(), int(parts[2]))
                    rec = self.pending.get(key)
                    if rec is None or rec[3] is not None:
                        continue
                    rec[3] = now
                    self.received += 1
                    if rec[1] is not None:
                        self.finish(key, rec)

    def assign(self, topic, partitions):
        tps = []
        for p in range(partitions):
            # Right after creation a partition may not have its leader yet: retry a while.
            deadline = time.monotonic() + 60
            while True:
                try:
                    _, high = self.consumer.get_watermark_offsets(
                        TopicPartition(topic, p), timeout=10
                    )
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            tps.append(TopicPartition(topic, p, high))
        self.consumer.assign(tps)

    def run_probe(self, topic, partitions):
        self.assign(topic, partitions)
        receiver = threading.Thread(target=self.consume_loop, name="receiver", daemon=True)
        receiver.start()
        pad = b"x" * max(0, self.args.payload_bytes - 40)
        start = mono_us()
        deadline = start
        warm_end = start + int(self.args.warmup * 1e6)
        end = warm_end + int(self.args.duration * 1e6) if self.args.duration > 0 else None
        window = None
        produce = self.producer.produce
        cb = self.on_delivery
        while not self.stop.is_set():
            now = mono_us()
            if end is not None and now >= end:
                break
            if window is None and now >= warm_end:
                window = self.snapshot()
            wait = deadline - now
            if wait > 0:
                # Serve delivery reports while waiting for the next tick.
                self.producer.poll(wait / 1e6)
                continue
            late = now - deadline
            missed = late // self.interval_us
            self.max_late_us = max(self.max_late_us, late - missed * self.interval_us)
            self.skipped += missed
            deadline += (missed + 1) * self.interval_us
            self.ticks += 1
            seq = self.ticks
            for p in range(partitions):
                send = wall_us()
                with self.lock:
                    self.pending[(p, seq)] = [send, None, 0, None]
                value = b"%s:%s:%d:%d:%s" % (MAGIC, self.run, seq, send, pad)
                try:
                    produce(topic, value, partition=p, on_delivery=cb)
                except BufferError:
                    with self.lock:
                        self.pending[(p, seq)][2] = -184  # queue full
                        self.failed += 1
            self.producer.poll(0)
        final = self.snapshot()
        self.stop.set()
        receiver.join()
        self.producer.flush(5)
        self.consumer.close()
        if self.csv:
            with self.lock:
                for (p, seq), rec in sorted(self.pending.items()):
                    fields = ["" if v is None else str(v) for v in rec]
                    self.csv.write(f"{p},{seq},{','.join(fields)}\n")
            self.csv.close()
        return window or final, final

    def snapshot(self):
        return {
            "t": time.monotonic(),
            "cpu": cpu_seconds(),
            "acked": self.acked,
            "received": self.received,
            "failed": self.failed,
            "ticks": self.ticks,
            "skipped": self.skipped,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument(
        "--create-partitions",
        type=int,
        default=0,
        help="create the topic with this many partitions when missing",
    )
    ap.add_argument("--replication-factor", type=int, default=3)
    ap.add_argument("--min-insync", type=int, default=2)
    ap.add_argument("--interval-ms", type=float, default=20.0)
    ap.add_argument("--payload-bytes", type=int, default=64)
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before the window")
    ap.add_argument(
        "--duration",
        type=float,
        default=0.0,
        help="seconds of the measurement window; 0: until SIGTERM/SIGINT",
    )
    ap.add_argument("--csv", default="", help="write one row per message here")
    ap.add_argument(
        "--linger-ms",
        type=float,
        default=None,
        help="the producer's linger.ms (librdkafka's default, 5, when not given)",
    )
    ap.add_argument(
        "--status-every",
        type=float,
        default=0.0,
        help="seconds: also print a JSON status line this often (kind 'status': "
        "t_us, acked, received, failed, ticks, skipped, cpu_s), so that another "
        "process can read this one's counters at a moment of its choosing",
    )
    args = ap.parse_args()

    partitions = ensure_topic(
        args.bootstrap, args.topic, args.create_partitions, args.replication_factor, args.min_insync
    )
    probe = Probe(args)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: probe.stop.set())
    if args.status_every > 0:

        def report():
            while not probe.stop.wait(args.status_every):
                snap = probe.snapshot()
                print(
                    json.dumps(
                        {
                            "kind": "status",
                            "t_us": wall_us(),
                            "acked": snap["acked"],
                            "received": snap["received"],
                            "failed": snap["failed"],
                            "ticks": snap["ticks"],
                            "skipped": snap["skipped"],
                            "cpu_s": snap["cpu"],
                        }
                    ),
                    flush=True,
                )

        threading.Thread(target=report, name="status", daemon=True).start()
    a, b = probe.run_probe(args.topic, partitions)
    window = b["t"] - a["t"]
    acked = b["acked"] - a["acked"]
    cpu = b["cpu"] - a["cpu"]
    rss = rss_kb()
    print(
        json.dumps(
            {
                "kind": "peer_probe",
                "partitions": partitions,
                "interval_us": probe.interval_us,
                "window_s": window,
                "acked": acked,
                "received": b["received"] - a["received"],
                "expected": partitions * window * 1e6 / probe.interval_us,
                "send_failed": b["failed"] - a["failed"],
                "ticks": b["ticks"] - a["ticks"],
                "skipped_ticks": b["skipped"] - a["skipped"],
                "max_send_lateness_us": probe.max_late_us,
                "cpu_s": cpu,
                "cpu_cores": cpu / window if window > 0 else 0,
                "cpu_ms_per_1000_acked": cpu * 1e6 / acked if acked else 0,
                "rss_kb": rss,
                "peak_rss_kb": rss_kb("VmHWM"),
                "csv": args.csv,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
