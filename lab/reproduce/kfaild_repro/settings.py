"""Where the results and the report are, the drills' labels, the article's figures and the probe
client settings kfaild sets itself."""

import os

# lab/reproduce, where the entry script is.
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY = os.path.join(HERE, "reproduce")
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
RESULTS = os.path.join(REPO, "lab", "results", "reproduce")
DOC = os.path.join(REPO, "docs", "REPRODUCTION.md")
CHART = os.path.join(REPO, "docs", "reproduction-stalls.png")
META_FILES = ("scenario.json", "versions.json")
KILLS = ("kill-1", "kill-2", "kill-3")
STOPS = ("stop-1", "stop-2", "stop-3")
ORDER = KILLS + STOPS + ("stop-no-election",)

# The article's figures (reference/broker-failure-article.ko.txt), seconds.
ARTICLE = {
    "detection": "8.27–8.89 s",
    "election_discovery": "0.06–0.60 s",
    "kill_p0": "9.40–10.24 s",
    "kill_followers": "8.37–8.97 s",
    "kill_failed": "0",
    "stop_new_leader": "~0.07 s",
    "stop_p0": "0.13–1.10 s",
    "stop_followers": "0.03–1.01 s (one run shown)",
    "single": "33.26 s",
    "no_election": "p0 stays on broker 2 until a preferred election",
}

# Probe client settings kfaild sets itself (server/probe/probe_runner.cc; the consumer's are
# reported as "consumer.KEY"); the rest of `probe_client` is librdkafka's own default. The repro
# config sets no `client:` at all.
KFAILD_SETS = {
    "consumer.fetch.max.bytes": "kfaild bounds a fetch answer (4 MiB); librdkafka's is 52428800",
    "consumer.queued.max.messages.kbytes": (
        "kfaild bounds the pre-fetched queue (16 MiB); librdkafka's is 65536"
    ),
    "consumer.fetch.min.bytes": (
        "librdkafka's default: a fetch is answered as soon as a probe message is there"
    ),
    "acks": "kfaild sets `all` (the article's probe too)",
    "enable.idempotence": (
        "kfaild's default, so that the probe's retries neither duplicate nor reorder; "
        "librdkafka's is false"
    ),
    "message.timeout.ms": (
        "kfaild's default, `probe.message_timeout_ms`: every message has a fate within it; "
        "librdkafka's is 300000"
    ),
    "queue.buffering.max.messages": (
        "kfaild sizes the local queue; the probe's own bound keeps it short"
    ),
    "reconnect.backoff.max.ms": (
        "kfaild's default: reconnect to a returning broker within a second; librdkafka's is 10000"
    ),
}
