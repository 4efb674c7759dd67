"""The payload check: valid frames pass every level, damaged ones are refused by name.

Every mutation here keeps the frame's crc valid (``tests.frame_mutations``): a crc check
alone would accept them all, and a reader would then fail on them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_stream.errors import CorruptFrameError
from spark_stream.frame_check import PAYLOAD_CHECKS, PayloadCheck, check_payload
from spark_stream.models.topic_schema import storage_schema
from spark_stream.records import (
    BATCH_HEADER_SIZE,
    RECORD_SCHEMA,
    Compression,
    decode_frame,
    encode_batch,
    read_header,
)
from tests.frame_mutations import POISON, resealed, sample

# What the structure level sees: everything but values inside buffers (list offsets).
STRUCTURAL = {
    "buffer out of bounds",
    "a column missing",
    "value column int64",
    "row count lie",
    "inflates to a terabyte",
}


def check(frame: bytes, level: PayloadCheck) -> None:
    check_payload(memoryview(frame), read_header(frame), RECORD_SCHEMA, level)


def typed_frame(compression: Compression) -> bytes:
    schema = storage_schema(
        pa.schema(
            [
                pa.field("n", pa.int64()),
                pa.field("tags", pa.list_(pa.struct([pa.field("t", pa.string())]))),
            ]
        )
    )
    rows = [
        {"n": 1, "tags": [{"t": "a"}], "timestamp": 5},
        {"n": None, "tags": None, "timestamp": 6},
    ]
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    return encode_batch(batch, schema_version=1, compression=compression)


@pytest.mark.parametrize("level", PAYLOAD_CHECKS)
@pytest.mark.parametrize("compression", ["none", "lz4", "zstd"])
def test_valid_frames_pass_every_level(level: PayloadCheck, compression: Compression) -> None:
    untyped = encode_batch(decode_frame(sample()), compression=compression)
    check(untyped, level)
    check(typed_frame(compression), level)


@pytest.mark.parametrize("name", sorted(POISON))
def test_a_poisoned_frame_is_refused_naming_its_offsets(name: str) -> None:
    frame = POISON[name](sample())
    with pytest.raises(CorruptFrameError, match=r"the frame of offsets \[0, \d+\]"):
        check(frame, "full")
    with pytest.raises(CorruptFrameError):
        decode_frame(frame)  # what every reader would meet had it been appended
    if name in STRUCTURAL:
        with pytest.raises(CorruptFrameError, match="not a record batch"):
            check(frame, "structure")
    else:
        check(frame, "structure")  # values are not read at this level
    check(frame, "none")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: f[:BATCH_HEADER_SIZE] + b"\x00" * (len(f) - BATCH_HEADER_SIZE), "marker"),
        (
            lambda f: f[: BATCH_HEADER_SIZE + 4] + b"\xff\xff\xff\x7f" + f[BATCH_HEADER_SIZE + 8 :],
            "message header",
        ),
    ],
)
def test_a_broken_message_prefix_is_refused(mutate: Callable[[bytes], bytes], message: str) -> None:
    with pytest.raises(CorruptFrameError, match=message):
        check(resealed(mutate(sample())), "structure")


@pytest.mark.parametrize("kind", ["untyped", "typed"])
def test_every_single_byte_change_is_refused_or_decodes(kind: str) -> None:
    """Byte by byte over the whole payload, two changes each: nothing but the typed error."""
    frame = sample() if kind == "untyped" else typed_frame("none")
    refused = accepted = 0
    for pos in range(BATCH_HEADER_SIZE, len(frame)):
        for flip in (0x01, 0xFF):
            damaged = bytearray(frame)
            damaged[pos] ^= flip
            mutated = resealed(damaged)
            try:
                check(mutated, "structure")  # never another exception type
                check(mutated, "full")
            except CorruptFrameError:
                refused += 1
                continue
            accepted += 1
            batch = decode_frame(mutated)
            batch.validate(full=True)
            assert batch.num_rows == 2
    assert refused > 0 and accepted > 0  # both outcomes happen: the sweep tests something


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6),
    st.sampled_from(["none", "lz4", "zstd"]),
)
def test_random_changes_are_refused_or_decode(
    changes: list[tuple[int, int]], compression: Compression
) -> None:
    frame = bytearray(encode_batch(decode_frame(sample()), compression=compression))
    for pos, value in changes:
        frame[BATCH_HEADER_SIZE + pos % (len(frame) - BATCH_HEADER_SIZE)] = value
    mutated = resealed(frame)
    for level in PAYLOAD_CHECKS:
        try:
            check(mutated, level)
        except CorruptFrameError:
            return
    decode_frame(mutated).validate(full=True)  # accepted at "full": every reader decodes it


# A fresh interpreter checks a frame read from stdin at every level and prints the
# heavy modules it then holds (frames are built here: building them may load anything).
_FIRST_CHECK = """
import sys
from spark_stream.frame_check import PAYLOAD_CHECKS, check_payload
from spark_stream.records import RECORD_SCHEMA, read_header
for frame in sys.stdin.buffer.read().split(b"--frame--"):
    for level in PAYLOAD_CHECKS:
        check_payload(memoryview(frame), read_header(frame), RECORD_SCHEMA, level)
print(sorted(m for m in ("pandas", "pyarrow.pandas_compat") if m in sys.modules))
"""


def test_the_first_check_of_a_process_loads_no_pandas() -> None:
    """The first frame an SPU checks must not wait for an import: pyarrow's
    ``pa.array([], type)`` imports pandas (0.2 s, 300 modules) on its first call, which
    cost the first bulk produce run of a new cluster a third of its rate."""
    frames = b"--frame--".join([sample(), typed_frame("none"), typed_frame("lz4")])
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_CHECK],
        input=frames,
        capture_output=True,
        check=True,
        timeout=120,  # against a hang only
    )
    assert done.stdout.decode().strip() == "[]"
