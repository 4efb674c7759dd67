"""Property: whatever the batch sizes, every offset reads back the record appended at it."""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spu.storage import LogConfig, ReplicaLog

from .helpers import make_frame, values_for


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=40),
    value_size=st.sampled_from([0, 30, 300]),
    segment_max_bytes=st.sampled_from([1500, 5000, 1 << 20]),
    interval=st.sampled_from([0, 700, 4096]),
    reopen=st.booleans(),
)
def test_every_offset_reads_back(
    sizes: list[int], value_size: int, segment_max_bytes: int, interval: int, reopen: bool
) -> None:
    config = LogConfig(
        segment_max_bytes=segment_max_bytes, index_interval_bytes=interval, flush_interval_ms=None
    )
    with tempfile.TemporaryDirectory() as directory:
        log = ReplicaLog.open(directory, config)
        expected: list[bytes] = []
        for tag, n in enumerate(sizes):
            (base,) = log.append_produced(make_frame(tag, n, size=value_size))
            assert base == len(expected)
            expected += values_for(tag, n, value_size)
        if reopen:
            log.close()
            log = ReplicaLog.open(directory, config)
        try:
            assert log.leo == len(expected)
            for offset in range(log.leo):
                piece = log.read(offset, 1)
                assert piece.base_offset <= offset < piece.next_offset
                (batch,) = piece.decode()
                assert (
                    batch.column("value")[offset - piece.base_offset].as_py() == (expected[offset])
                )
        finally:
            log.close()
