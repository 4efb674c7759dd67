"""Background care of the open replica logs: fsync off the event loop, checkpoints, retention.

Why here and not in the storage engine's flush policy: the engine fsyncs inline, on the
thread that appends, and an SPU appends on its one event loop, so every fsync (tens of
milliseconds on a busy disk) would stall every partition's produce, fetch and
replication. The SPU therefore opens its logs without an inline flush policy and this
task does the work instead, once per ``interval_s``:

- **data**: ``fdatasync`` of the segment holding the last record, in a worker thread.
  The descriptor comes from a read slice, which keeps it open while the thread runs,
  even if the log rolls, is truncated or closed meanwhile (a sealed segment was already
  fsynced by its roll, so syncing it again is harmless);
- **high-watermark checkpoint**: when the HW moved, every ``checkpoint_every_s``, also
  in a worker thread (it is tiny but fsyncs twice). The thread holds the checkpoint
  file's lock while it reads the HW and writes it, and the log's own checkpoints (on
  truncation and close) take the same lock, so whatever the order the newest value is
  the one left on disk. A stale checkpoint only means a follower compares more of its
  tail after a restart;
- **retention**: ``log.apply_retention()`` every ``retention_every_s``, below the
  partition's ``floor`` when it has one (a tiered partition: its tier's end, see
  ``spu.tiering``).
- **idle files**: every round, segments unused for a while close their files
  (``spu.storage.open_files``), so an idle replica holds no descriptor of its segments.

Durability across machines comes from replication (``acks=all``), as in Kafka; the
engine still fsyncs on roll and close.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping

from spark_stream.errors import FluvioError
from spu.storage import ReplicaLog
from spu.storage.checkpoint import checkpoint_lock, write_checkpoint
from spu.storage.layout import CHECKPOINT_NAME
from spu.storage.open_files import OPEN_FILES

__all__ = ["Housekeeper", "sync_data", "checkpoint_hw"]

logger = logging.getLogger(__name__)


async def sync_data(log: ReplicaLog) -> bool:
    """fdatasync the segment holding the log's last record off the event loop.

    Returns:
        False when there was nothing to sync (empty or closed log).
    """
    if log.closed or log.leo <= log.log_start_offset:
        return False
    piece = log.read(log.leo - 1, 1)
    if not piece.length:
        return False
    await asyncio.to_thread(os.fdatasync, piece.fileno())
    return True


def _write_current_hw(log: ReplicaLog) -> int:
    """Write the log's HW as it is under the checkpoint lock (runs in a worker thread)."""
    path = log.directory / CHECKPOINT_NAME
    with checkpoint_lock(path):
        hw = log.hw
        if not log.closed:  # a closed log checkpointed itself
            write_checkpoint(path, hw)
    return hw


async def checkpoint_hw(log: ReplicaLog) -> int:
    """Checkpoint the log's high watermark off the event loop; returns the value written."""
    return await asyncio.to_thread(_write_current_hw, log)


class Housekeeper:
    """Runs the periodic work over whatever logs ``logs()`` returns.

    Args:
        logs: the open logs by partition name, read at every round.
        interval_s: data sync period.
        checkpoint_every_s: high-watermark checkpoint period.
        retention_every_s: retention period.
        floor: the retention floor of a partition by name (``None``: none).
        release_idle: closes idle segments' files, once a round.
    """

    def __init__(
        self,
        logs: Callable[[], Mapping[str, ReplicaLog]],
        *,
        interval_s: float = 1.0,
        checkpoint_every_s: float = 10.0,
        retention_every_s: float = 60.0,
        floor: Callable[[str], int | None] | None = None,
        release_idle: Callable[[], int] = OPEN_FILES.sweep,
    ) -> None:
        self._logs = logs
        self._release_idle = release_idle
        self._floor = floor
        self.interval_s = interval_s
        self._checkpoint_every = max(1, round(checkpoint_every_s / interval_s))
        self._retention_every = max(1, round(retention_every_s / interval_s))
        self._synced_leo: dict[int, int] = {}
        self._checkpointed_hw: dict[int, int] = {}
        self.rounds = 0

    async def run(self) -> None:
        """Forever: one round per ``interval_s``."""
        while True:
            await asyncio.sleep(self.interval_s)
            await self.round()

    async def round(self) -> None:
        """One pass over every open log; a failure is logged and skips that log only."""
        self.rounds += 1
        logs = dict(self._logs())
        live = {id(log) for log in logs.values()}
        for key in [k for k in self._synced_leo if k not in live]:
            self._synced_leo.pop(key, None)
            self._checkpointed_hw.pop(key, None)
        due = self.rounds % self._checkpoint_every == 0 or self.rounds % self._retention_every == 0
        for name, log in logs.items():
            if not due and self._synced_leo.get(id(log)) == log.leo:
                continue  # nothing appended since its sync, no checkpoint or retention due
            try:
                await self._care(name, log)
            except FluvioError as exc:
                logger.error("housekeeping failed partition=%s: %s", name, exc)
            except Exception:
                logger.exception("housekeeping failed partition=%s", name)
        self._release_idle()

    async def _care(self, name: str, log: ReplicaLog) -> None:
        key = id(log)
        leo = log.leo
        if self._synced_leo.get(key) != leo:
            await sync_data(log)  # False: nothing to sync at this LEO (empty, closed)
            self._synced_leo[key] = leo
        if log.closed:
            return
        if self.rounds % self._checkpoint_every == 0 and self._checkpointed_hw.get(key) != log.hw:
            self._checkpointed_hw[key] = await checkpoint_hw(log)
        if self.rounds % self._retention_every == 0:
            floor = None if self._floor is None else self._floor(name)
            removed = log.apply_retention(floor=floor)
            if removed:
                logger.info("retention removed %d segments dir=%s", len(removed), log.directory)
