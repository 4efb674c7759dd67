"""A damaged frame on the way to a reader: named by its offsets, or skipped with a WARNING."""

from __future__ import annotations

import logging

import pytest

from spark_stream.client.config import ConsumerConfig
from spark_stream.client.consumer.corrupt import checked, read_frame
from spark_stream.errors import CorruptFrameError, InvalidConfigError
from spark_stream.records import RECORD_SCHEMA, encode_records, read_header, with_base_offset
from tests.frame_mutations import list_offsets_past_child, sample


def rotten() -> memoryview:
    frame = bytearray(with_base_offset(encode_records([b"a", b"b", b"c"]), 40))
    frame[-5] ^= 0x10
    return memoryview(bytes(frame))


def test_a_crc_failure_names_the_range_and_the_option() -> None:
    frame = rotten()
    with pytest.raises(CorruptFrameError) as info:
        checked(frame, read_header(frame), where="t-0", skip=False)
    message = str(info.value)
    assert message.startswith("t-0: crc mismatch in the frame of offsets [40, 42]")
    assert "skip_corrupt_frames" in message


def test_a_skipped_crc_failure_warns_naming_the_range(caplog: pytest.LogCaptureFixture) -> None:
    frame = rotten()
    with caplog.at_level(logging.WARNING):
        assert not checked(frame, read_header(frame), where="t-0", skip=True)
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "t-0: skipping the frame of offsets [40, 42], damaged (3 records" in record.getMessage()


def test_a_payload_that_does_not_decode(caplog: pytest.LogCaptureFixture) -> None:
    frame = memoryview(with_base_offset(list_offsets_past_child(sample()), 7))
    header = read_header(frame)
    damaged = r"t-1: the payload of the frame of offsets \[7, 8\]"
    with pytest.raises(CorruptFrameError, match=damaged):
        read_frame(frame, header, schema=RECORD_SCHEMA, with_offsets=True, where="t-1", skip=False)
    with caplog.at_level(logging.WARNING):
        skipped = read_frame(
            frame, header, schema=RECORD_SCHEMA, with_offsets=True, where="t-1", skip=True
        )
    assert skipped is None
    assert "skipping the frame of offsets [7, 8]" in caplog.text


def test_a_good_frame_reads_whatever_the_option() -> None:
    frame = memoryview(with_base_offset(sample(), 3))
    for skip in (False, True):
        batch = read_frame(
            frame, read_header(frame), schema=RECORD_SCHEMA, with_offsets=True,
            where="t-0", skip=skip, check_crc=True,
        )  # fmt: skip
        assert batch is not None and batch.column("offset").to_pylist() == [3, 4]


def test_the_consumer_option_is_a_bool() -> None:
    assert ConsumerConfig.from_options(skip_corrupt_frames=True).skip_corrupt_frames is True
    assert ConsumerConfig().skip_corrupt_frames is False
    with pytest.raises(InvalidConfigError, match="skip_corrupt_frames"):
        ConsumerConfig.from_options(skip_corrupt_frames="yes")
