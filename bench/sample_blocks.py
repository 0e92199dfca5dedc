"""Reads kfaild's probe samples from its SQLite file in Python: the samples are stored in blocks
(table probe_sample_blocks; format in storage/sample_block.h), one BLOB per run of one
partition's samples, so plain SQL cannot list them one by one.

    from sample_blocks import samples
    for s in samples("/var/lib/kfaild/kfaild.db", since_us=...):
        s["partition_id"], s["topic"], s["partition"], s["seq"], s["send_us"], s["ack_us"], ...

Also a command: `python3 bench/sample_blocks.py DB [TOPIC PARTITION]` prints CSV.
"""

import sqlite3
import sys

FORMAT = 1
SPAN_US = 2_000_000  # kSampleBlockSpanUs: a block's samples lie in [first_send_us, + span)
ACK, OFFSET, RECEIVE, ERROR, SEQ_EXPLICIT, OFFSET_EXPLICIT = 1, 2, 4, 8, 16, 32
MASK = (1 << 64) - 1


def _wrap(v):
    v &= MASK
    return v - (1 << 64) if v >> 63 else v


def decode(data, base_send_us):
    """The samples of one block, in the order stored (by send time)."""
    at = 0

    def varint():
        nonlocal at
        value, shift = 0, 0
        while True:
            b = data[at]
            at += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def signed():
        v = varint()
        return (v >> 1) ^ -(v & 1)

    if data[0] != FORMAT:
        raise ValueError(f"unknown sample block format {data[0]}")
    at = 1
    count = varint()
    flags_of = []
    for _ in range(varint()):
        length = varint()
        flags_of += [data[at]] * length
        at += 1
    if len(flags_of) != count:
        raise ValueError("flag runs do not cover the samples")
    out = []
    prev_send, prev_delta, prev_seq = base_send_us, 0, -1
    prev_ack, prev_offset, prev_receive = 0, -1, 0
    for flags in flags_of:
        prev_delta = _wrap(prev_delta + signed())
        send = _wrap(prev_send + prev_delta)
        prev_send = send
        seq = _wrap(prev_seq + 1 + (signed() if flags & SEQ_EXPLICIT else 0))
        prev_seq = seq
        s = {
            "seq": seq,
            "send_us": send,
            "ack_us": None,
            "ack_error": 0,
            "offset": None,
            "receive_us": None,
        }
        if flags & ACK:
            prev_ack = _wrap(prev_ack + signed())
            s["ack_us"] = _wrap(send + prev_ack)
        if flags & ERROR:
            s["ack_error"] = signed()
        if flags & OFFSET:
            prev_offset = _wrap(prev_offset + 1 + (signed() if flags & OFFSET_EXPLICIT else 0))
            s["offset"] = prev_offset
        if flags & RECEIVE:
            prev_receive = _wrap(prev_receive + signed())
            s["receive_us"] = _wrap(send + prev_receive)
        out.append(s)
    if at != len(data):
        raise ValueError("trailing bytes in a sample block")
    return out


def samples(db, since_us=None, until_us=None, topic=None, partition=None):
    """Every stored sample (optionally of one topic partition, sent in [since, until)), sorted by
    partition id, send time and seq; a message written twice appears once (the later write)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    sql = (
        "SELECT b.id, b.partition_id, p.topic, p.partition, b.first_send_us, b.data "
        "FROM probe_sample_blocks b JOIN probe_partitions p ON p.id = b.partition_id WHERE 1"
    )
    args = []
    if topic is not None:
        sql += " AND p.topic = ? AND p.partition = ?"
        args += [topic, partition]
    if since_us is not None:
        sql += " AND b.first_send_us > ?"
        args.append(since_us - SPAN_US)
    if until_us is not None:
        sql += " AND b.first_send_us < ?"
        args.append(until_us)
    found = {}
    for block, pid, t, part, first, data in con.execute(sql, args):
        for s in decode(data, first):
            if since_us is not None and s["send_us"] < since_us:
                continue
            if until_us is not None and s["send_us"] >= until_us:
                continue
            s.update(partition_id=pid, topic=t, partition=part)
            key = (pid, s["send_us"], s["seq"])
            if key not in found or found[key][0] < block:
                found[key] = (block, s)
    con.close()
    return [found[k][1] for k in sorted(found)]


if __name__ == "__main__":
    if len(sys.argv) not in (2, 4):
        sys.exit("usage: sample_blocks.py DB [TOPIC PARTITION]")
    topic = sys.argv[2] if len(sys.argv) == 4 else None
    part = int(sys.argv[3]) if len(sys.argv) == 4 else None
    cols = ["topic", "partition", "seq", "send_us", "ack_us", "ack_error", "offset", "receive_us"]
    print(",".join(cols))
    for s in samples(sys.argv[1], topic=topic, partition=part):
        print(",".join("" if s[c] is None else str(s[c]) for c in cols))
