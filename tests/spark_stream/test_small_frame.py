"""The small-frame encoder: the same frames as ``encode_batch``, for a few records."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_stream.frame_check import check_payload
from spark_stream.records import (
    RECORD_SCHEMA,
    decode_frame,
    encode_records,
    read_header,
    verify_frame,
)
from spark_stream.small_frame import SMALL_ROWS, encode_small

TS = 1_700_000_000_000_000

records = st.integers(1, SMALL_ROWS).flatmap(
    lambda n: st.tuples(
        st.lists(st.binary(max_size=40), min_size=n, max_size=n),
        st.none() | st.lists(st.none() | st.binary(max_size=12), min_size=n, max_size=n),
        st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n),
    )
)


@settings(max_examples=300, deadline=None)
@given(
    records,
    st.integers(-1, 2**40),
    st.integers(-1, 2**31 - 1),
)
def test_small_frames_decode_like_the_general_encoder(
    rows: tuple[list[bytes], list[bytes | None] | None, list[int]], producer: int, sequence: int
) -> None:
    values, keys, stamps = rows
    small = encode_small(values, keys, stamps, producer_id=producer, sequence=sequence)
    assert small is not None
    general = encode_records(values, keys, stamps, producer_id=producer, sequence=sequence)
    header = verify_frame(small)  # whole, crc right
    assert header == read_header(general)  # count, timestamps, producer, sequence, crc
    got = decode_frame(small, with_offsets=True)
    assert got.equals(decode_frame(general, with_offsets=True))
    assert got.schema.equals(decode_frame(general, with_offsets=True).schema)
    # What an SPU checks at its strictest setting before appending.
    check_payload(memoryview(small), header, RECORD_SCHEMA, "full")


def test_all_keyless_and_all_keyed_rows() -> None:
    keyless = decode_frame(encode_small([b"a", b"bc"], None, [TS, TS + 1]) or b"")
    assert keyless.column("key").to_pylist() == [None, None]
    assert keyless.column("value").to_pylist() == [b"a", b"bc"]
    keyed = decode_frame(encode_small([b"a"], [b"k"], [TS]) or b"")
    assert keyed.column("key").to_pylist() == [b"k"]
    assert keyed.column("headers").to_pylist() == [None]


def test_more_than_small_rows_is_left_to_the_general_encoder() -> None:
    n = SMALL_ROWS + 1
    assert encode_small([b"v"] * n, None, [TS] * n) is None


@pytest.mark.parametrize(
    ("values", "keys", "stamps", "message"),
    [
        ([], None, [], "at least one record"),
        ([b"a"], None, [], "do not match"),
        ([b"a"], [b"k", b"l"], [TS], "do not match"),
        ([b"a"], None, [2**63], "int64"),
    ],
)
def test_bad_input_is_a_value_error(
    values: list[bytes], keys: list[bytes | None] | None, stamps: list[int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        encode_small(values, keys, stamps)
