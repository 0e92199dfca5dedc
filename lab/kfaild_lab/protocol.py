"""Kafka's DescribeCluster (API key 60, version 2, KIP-1073): the brokers a node knows, fenced or
not; and DescribeQuorum (API key 55, KIP-595/836): the KRaft quorum as its leader sees it.
Spoken directly so that `status` and `quorum` cost milliseconds instead of a JVM start."""

import socket
import struct
from typing import Any, Self

from .layout import host_of_port

# DescribeQuorum's answer: leader, epoch, high_watermark, voters, observers.
Quorum = dict[str, Any]


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("truncated response")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def uvarint(value: int) -> bytes:
    out = b""
    while value >= 0x80:
        out += bytes([(value & 0x7F) | 0x80])
        value >>= 7
    return out + bytes([value])


def compact_string(text: str) -> bytes:
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


class Connection:
    """One connection to a node, for a few requests in a row; `timeout` s for each step."""

    CLIENT_ID = b"kfaild-lab"

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.correlation = 0
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def call(self, api_key: int, version: int, body: bytes, flexible: bool = True) -> Reader:
        """Sends a request (header v2 if `flexible`, else v1), returns a Reader of the response
        body. ApiVersions (18) answers with header v0 whatever its version, the others with v1
        when flexible."""
        self.correlation += 1
        header = (
            struct.pack(">hhih", api_key, version, self.correlation, len(self.CLIENT_ID))
            + self.CLIENT_ID
        )
        if flexible:
            header += b"\x00"  # no tagged fields
        request = header + body
        self.sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", recv_exactly(self.sock, 4))[0]
        r = Reader(recv_exactly(self.sock, size))
        if r.int32() != self.correlation:
            raise ValueError("unexpected correlation id")
        if flexible and api_key != 18:
            r.tagged_fields()
        return r

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """ApiVersions v0: {api key: (min version, max version)}."""
        r = self.call(18, 0, b"", flexible=False)
        error = r.int16()
        if error:
            raise ValueError(f"ApiVersions error {error}")
        versions = {}
        for _ in range(r.int32()):
            key, low, high = r.int16(), r.int16(), r.int16()
            versions[key] = (low, high)
        return versions


def describe_cluster(
    port: int, endpoint_type: int = 1, timeout: float = 1.0, host: str | None = None
) -> dict[str, Any]:
    """Returns {'cluster_id', 'controller_id', 'nodes': {id: {'host', 'port', 'fenced'}}}.

    endpoint_type 1 asks a broker for the brokers, 2 asks a controller for the controllers.
    Raises OSError or ValueError when the node does not answer or answers with an error."""
    body = struct.pack(">bbb", 0, endpoint_type, 1) + b"\x00"
    with Connection(host or host_of_port(port), port, timeout) as conn:
        r = conn.call(60, 2, body)
    r.int32()  # throttle time
    error = r.int16()
    message = r.compact_string()
    if error:
        raise ValueError(f"DescribeCluster error {error}: {message}")
    r.int8()  # endpoint type
    cluster_id = r.compact_string()
    controller_id = r.int32()
    nodes = {}
    for _ in range(r.uvarint() - 1):
        node = r.int32()
        host = r.compact_string()
        nport = r.int32()
        r.compact_string()  # rack
        fenced = r.int8() != 0
        r.tagged_fields()
        nodes[node] = {"host": host, "port": nport, "fenced": fenced}
    return {"cluster_id": cluster_id, "controller_id": controller_id, "nodes": nodes}


NOT_LEADER_OR_FOLLOWER = 6
METADATA_TOPIC = "__cluster_metadata"


class NotLeader(Exception):
    """The voter asked is not the quorum's leader. (Kafka 4.3 does not say who is: LeaderId and
    LeaderEpoch of such an answer are 0.)"""

    def __init__(self) -> None:
        super().__init__("not the leader (NOT_LEADER_OR_FOLLOWER)")


def describe_quorum(port: int, timeout: float = 1.0, host: str | None = None) -> Quorum:
    """DescribeQuorum of __cluster_metadata-0, asked of one controller on its controller
    listener, in the highest version up to 2 it supports (ApiVersions first, same connection;
    `timeout` s for each step).
    Returns {'leader', 'epoch', 'high_watermark', 'voters': [...], 'observers': [...]}, each
    replica {'id', 'log_end_offset', 'last_caught_up_timestamp'}. Raises NotLeader when the
    controller is a voter but not the leader (NOT_LEADER_OR_FOLLOWER), OSError or ValueError
    when it does not answer or answers otherwise."""
    with Connection(host or host_of_port(port), port, timeout) as conn:
        supported = conn.api_versions().get(55)
        if supported is None:
            raise ValueError("DescribeQuorum is not supported")
        version = min(2, supported[1])
        if version < supported[0]:
            raise ValueError(f"DescribeQuorum versions {supported[0]}..{supported[1]} only")
        body = (
            uvarint(2)
            + compact_string(METADATA_TOPIC)  # one topic
            + uvarint(2)
            + struct.pack(">i", 0)
            + b"\x00"  # one partition, index 0
            + b"\x00"  # topic's tagged fields
            + b"\x00"
        )  # request's tagged fields
        r = conn.call(55, version, body)
    error = r.int16()
    message = r.compact_string() if version >= 2 else None
    if error == NOT_LEADER_OR_FOLLOWER:
        raise NotLeader()
    if error:
        raise ValueError(f"DescribeQuorum error {error}" + (f": {message}" if message else ""))

    def replicas() -> list[dict[str, int]]:
        out = []
        for _ in range(r.uvarint() - 1):
            rid = r.int32()
            if version >= 2:
                r.take(16)  # replica directory id
            leo = r.int64()
            if version >= 1:
                r.int64()  # last fetch timestamp
                caught_up = r.int64()
            else:
                caught_up = -1
            r.tagged_fields()
            out.append({"id": rid, "log_end_offset": leo, "last_caught_up_timestamp": caught_up})
        return out

    for _ in range(r.uvarint() - 1):
        topic = r.compact_string()
        for _ in range(r.uvarint() - 1):
            index = r.int32()
            perror = r.int16()
            pmessage = r.compact_string() if version >= 2 else None
            leader, epoch, hwm = r.int32(), r.int32(), r.int64()
            voters, observers = replicas(), replicas()
            r.tagged_fields()
            if topic != METADATA_TOPIC or index != 0:
                continue
            if perror == NOT_LEADER_OR_FOLLOWER:
                raise NotLeader()
            if perror:
                raise ValueError(
                    f"DescribeQuorum error {perror}" + (f": {pmessage}" if pmessage else "")
                )
            return {
                "leader": leader,
                "epoch": epoch,
                "high_watermark": hwm,
                "voters": voters,
                "observers": observers,
            }
        r.tagged_fields()
    raise ValueError(f"DescribeQuorum answered without {METADATA_TOPIC}-0")


def recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf
