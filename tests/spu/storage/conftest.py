"""Fixtures for the storage tests: a small config and a log factory that closes its logs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spu.storage import LogConfig, ReplicaLog


@pytest.fixture
def small_config() -> LogConfig:
    """Small segments and a dense index, so a few batches exercise rolls and lookups."""
    return LogConfig(segment_max_bytes=4096, index_interval_bytes=600, flush_interval_ms=None)


@pytest.fixture
def open_log(tmp_path: Path, small_config: LogConfig) -> Iterator[Callable[..., ReplicaLog]]:
    """Open logs in ``tmp_path/replica``; every log opened is closed after the test."""
    opened: list[ReplicaLog] = []

    def _open(config: LogConfig | None = None, **kwargs: object) -> ReplicaLog:
        log = ReplicaLog.open(tmp_path / "replica", config or small_config, **kwargs)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close()
