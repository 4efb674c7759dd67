"""Housekeeping: data sync off the loop, periodic HW checkpoint, retention, closed logs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from spark_stream.records import encode_records
from spu.housekeeping import Housekeeper, checkpoint_hw, sync_data
from spu.storage import LogConfig, ReplicaLog
from spu.storage.checkpoint import read_checkpoint
from spu.storage.layout import CHECKPOINT_NAME


def test_sync_checkpoint_and_closed_logs(tmp_path: Path) -> None:
    async def body() -> None:
        config = LogConfig(flush_interval_ms=None)
        log = ReplicaLog.open(tmp_path / "t-0", config)
        logs = {"t-0": log}
        keeper = Housekeeper(lambda: logs, interval_s=1, checkpoint_every_s=2)
        assert not await sync_data(log)  # empty: nothing to sync
        log.append_produced(encode_records(["a", "b"]))
        log.hw = 2
        assert await sync_data(log)
        await keeper.round()
        assert read_checkpoint(tmp_path / "t-0" / CHECKPOINT_NAME) in (None, 0)
        await keeper.round()  # the second round checkpoints the moved HW
        assert read_checkpoint(tmp_path / "t-0" / CHECKPOINT_NAME) == 2
        log.append_produced(encode_records(["c"]))
        log.hw = 3
        log.truncate_to(2)  # the log's own checkpoint: HW cut to the new LEO
        assert await checkpoint_hw(log) == 2
        assert read_checkpoint(tmp_path / "t-0" / CHECKPOINT_NAME) == 2
        log.close()
        assert not await sync_data(log)
        await keeper.round()  # a closed log is skipped, not an error
        logs.clear()
        await keeper.round()
        assert keeper.rounds == 4

    asyncio.run(body())
