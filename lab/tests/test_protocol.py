"""The Kafka wire encoding the lab speaks for DescribeCluster and DescribeQuorum."""

import pytest

from kfaild_lab.protocol import Reader, compact_string, uvarint


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**21, 2**31 - 1])
def test_an_unsigned_varint_reads_back_as_written(value: int) -> None:
    assert Reader(uvarint(value)).uvarint() == value


def test_a_varint_takes_seven_bits_a_byte() -> None:
    assert uvarint(127) == b"\x7f"
    assert uvarint(128) == b"\x80\x01"


def test_a_compact_string_is_its_length_plus_one_then_its_bytes() -> None:
    assert compact_string("__cluster_metadata") == b"\x13__cluster_metadata"
    assert Reader(compact_string("kfaild")).compact_string() == "kfaild"


def test_a_null_compact_string_reads_as_none() -> None:
    assert Reader(b"\x00").compact_string() is None


def test_fixed_width_integers_are_big_endian_and_signed() -> None:
    r = Reader(b"\xff\x00\x02\x00\x00\x00\x03" + b"\x00" * 7 + b"\x04")
    assert (r.int8(), r.int16(), r.int32(), r.int64()) == (-1, 2, 3, 4)


def test_a_truncated_response_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="truncated"):
        Reader(b"\x00\x01").int32()
