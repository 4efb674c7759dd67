"""The key hash and the partitioner: one-key and vectorised paths agree, and are stable."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_stream.client.producer.partitioner import Partitioner, fnv1a_32, fnv1a_32_array
from spark_stream.errors import InvalidConfigError

# Reference values of 32-bit FNV-1a (published test vectors).
VECTORS = [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)]


@pytest.mark.parametrize(("data", "expected"), VECTORS)
def test_fnv1a_matches_published_vectors(data: bytes, expected: int) -> None:
    assert fnv1a_32(data) == expected
    assert fnv1a_32_array(pa.array([data], pa.binary()))[0] == expected


def test_str_keys_hash_as_utf8() -> None:
    assert fnv1a_32("héllo") == fnv1a_32("héllo".encode())
    assert fnv1a_32_array(pa.array(["héllo"]))[0] == fnv1a_32("héllo")


@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=60))
def test_vectorised_hash_equals_one_key_hash(keys: list[bytes | None]) -> None:
    arr = pa.array(keys, pa.binary())
    expected = [fnv1a_32(k if k is not None else b"") for k in keys]
    assert fnv1a_32_array(arr).tolist() == expected
    assert fnv1a_32_array(arr.cast(pa.large_binary())).tolist() == expected


@given(st.lists(st.binary(min_size=8, max_size=8), min_size=1, max_size=50))
def test_equal_length_fast_path(keys: list[bytes]) -> None:
    arr = pa.array(keys, pa.binary())
    assert fnv1a_32_array(arr).tolist() == [fnv1a_32(k) for k in keys]


def test_sliced_and_chunked_arrays() -> None:
    keys = [f"key-{i}".encode() for i in range(100)]
    arr = pa.array(keys, pa.binary())
    assert fnv1a_32_array(arr.slice(30, 20)).tolist() == [fnv1a_32(k) for k in keys[30:50]]
    chunked = pa.chunked_array([arr.slice(0, 10), arr.slice(10, 90)])
    assert fnv1a_32_array(chunked).tolist() == [fnv1a_32(k) for k in keys]


def test_hash_partitions_are_stable_and_agree() -> None:
    part = Partitioner("hash")
    keys = [f"user-{i}".encode() for i in range(1000)]
    one = [part.partition(k, 7) for k in keys]
    bulk = part.partitions(pa.array(keys, pa.binary()), len(keys), 7)
    assert one == bulk.tolist()
    assert one == [fnv1a_32(k) % 7 for k in keys]
    assert set(one) == set(range(7))


def test_default_partitioner_spreads_keyless_records_round_robin() -> None:
    part = Partitioner("default")
    assert [part.partition(None, 3) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
    bulk = part.partitions(None, 6, 3)
    assert sorted(np.bincount(bulk, minlength=3).tolist()) == [2, 2, 2]


def test_default_bulk_mixes_hashed_and_null_keys() -> None:
    part = Partitioner("default")
    keys = pa.array([b"a", None, b"b", None, None, None], pa.binary())
    out = part.partitions(keys, 6, 4)
    assert out[0] == fnv1a_32(b"a") % 4 and out[2] == fnv1a_32(b"b") % 4
    assert sorted(out[[1, 3, 4, 5]].tolist()) == [0, 1, 2, 3]


def test_hash_strategy_sends_keyless_to_partition_zero() -> None:
    part = Partitioner("hash")
    assert part.partition(None, 5) == 0
    assert part.partitions(pa.array([None, b"x"], pa.binary()), 2, 5)[0] == 0


def test_round_robin_ignores_keys() -> None:
    part = Partitioner("round_robin")
    assert [part.partition(b"same", 2) for _ in range(4)] == [0, 1, 0, 1]


def test_bad_inputs_are_typed_errors() -> None:
    with pytest.raises(InvalidConfigError):
        Partitioner("sticky")
    with pytest.raises(InvalidConfigError):
        Partitioner().partition(b"k", 0)
    with pytest.raises(InvalidConfigError):
        fnv1a_32_array(pa.array([1, 2]))
    with pytest.raises(InvalidConfigError):
        Partitioner().partitions(pa.array([b"a"]), 2, 3)
