"""Tiering: each partition's leader copies its sealed segments to the topic's tier.

Theory of operation. ``TierKeeper`` runs one round every ``interval_s`` over the open
logs of tiered topics (the partition spec carries ``tier``):

- **Leaders** (never followers) tier. For each partition, one job at a time, at most
  ``concurrency`` jobs at once, in worker threads: the job loads the manifest, and on the
  event loop the keeper takes read slices of the pieces the manifest lacks
  (``tier_plan.pieces_to_tier``: committed parts of sealed segments from the
  manifest's end on). The thread then writes each piece as Parquet
  (``{tier}/partition={p}/{base:020}.parquet``, atomically), records it in the
  manifest (written atomically after each file) and tells the topic's hook
  (``tier_hooks``). A new leader resumes where the manifest ends; a crash between a
  file and its manifest entry is repaired by writing the same file again. The produce
  path never waits for any of this: slices are views of the memory-mapped segments.
- **Leftover temporary files**: a file is written under a hidden temporary name carrying
  the writer's leader epoch, then moved in; a leader killed in between leaves the
  temporary file. The first job of each leadership (a new epoch, or a restarted SPU)
  first removes those of its partition from epochs up to its own
  (``spark_stream.tier.layout.stale_temps``), so nothing piles up in the tier.
- **Tier retention**: in the same job, the oldest entries whose newest record is older
  than the topic's retention leave the manifest, then their files are deleted.
- **Local retention floor**: the keeper knows each tiered partition's manifest end
  (leaders from their jobs, followers by reading the manifest); the housekeeper deletes
  a local segment only below it (``floor``), and only once local retention passed.
  While the tier fails, the floor stays where it was: segments are held back.
- **Status**: a job's outcome (``ok: N files [a, b)`` or ``error: <cause>``) goes to the
  leader controller's status, which the SC shows in ``partition list``; a new error is
  logged at ERROR with the tier URL and the cause, the recovery at INFO.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from spark_stream.errors import FluvioError
from spark_stream.models import PartitionSpec
from spark_stream.models.topic_schema import storage_schema
from spark_stream.protocol.control import Replica
from spark_stream.records import RECORD_SCHEMA, iter_frames
from spark_stream.tier import TierEntry, TierManifest, data_file, load_manifest, save_manifest
from spark_stream.tier.layout import join
from spark_stream.tier.store import file_size, remove, remove_stale_temps
from spu.storage import LogSlice, ReplicaLog
from spu.storage.tier import write_parquet
from spu.tier_hooks import TierHook, table_hook
from spu.tier_plan import pieces_to_tier, tier_status_text

__all__ = ["TierKeeper", "TierOutcome", "tier_schema", "tier_slices"]

logger = logging.getLogger(__name__)


def tier_schema(spec: PartitionSpec) -> pa.Schema:
    """The record columns of a partition's tier files: ``RECORD_SCHEMA`` for an untyped
    topic, the latest storage schema of a typed one (older frames widened)."""
    schema = spec.topic_schema
    return RECORD_SCHEMA if schema is None else storage_schema(schema.user_schema())


@dataclass(frozen=True, slots=True)
class TierOutcome:
    """What one tiering job left: the manifest (as far as it got) and the error, if any."""

    manifest: TierManifest
    error: str | None = None
    written: int = 0


def _entry(
    tier_url: str, partition: int, piece: LogSlice, schema: pa.Schema, epoch: int | None
) -> TierEntry:
    """Write one slice as a tier file; its manifest entry."""
    relative = data_file(partition, piece.base_offset)
    url = join(tier_url, relative)
    write_parquet(
        piece.data,
        base_offset=piece.base_offset,
        next_offset=piece.next_offset,
        schema=schema,
        tier_url=tier_url,
        file_url=url,
        epoch=epoch,
    )
    newest = max((h.max_timestamp for h, _ in iter_frames(piece.data, check_crc=False)), default=-1)
    return TierEntry(
        base_offset=piece.base_offset,
        next_offset=piece.next_offset,
        records=piece.next_offset - piece.base_offset,
        bytes=file_size(url),
        file=relative,
        max_timestamp=newest,
    )


def tier_slices(
    tier_url: str,
    manifest: TierManifest,
    slices: list[LogSlice],
    schema: pa.Schema,
    hook: TierHook | None,
    *,
    replay: bool = False,
    cutoff_us: int | None = None,
    epoch: int | None = None,
) -> TierOutcome:
    """Write ``slices`` to the tier, record them, apply tier retention (a worker thread).

    Args:
        tier_url: the topic's tier directory.
        manifest: the partition's manifest as loaded.
        slices: the pieces to tier, in order, each continuing the manifest.
        schema: the record columns of the files.
        hook: told about each recorded entry.
        replay: first offer every entry already in the manifest to ``hook``.
        cutoff_us: entries whose newest record is older leave the tier.
        epoch: the leader epoch this SPU writes under (names its temporary files).

    Returns:
        The outcome; an error stops the job where it happened.
    """
    partition = manifest.partition
    written = 0
    try:
        if replay and hook is not None:
            for held in manifest.files:
                hook.on_tiered(partition, held)
        for piece in slices:
            end = manifest.end_offset
            if end is not None and piece.next_offset <= end:
                continue  # recorded by an earlier attempt
            entry = _entry(tier_url, partition, piece, schema, epoch)
            manifest = manifest.with_entry(entry)
            save_manifest(tier_url, manifest, epoch=epoch)
            written += 1
            if hook is not None:
                hook.on_tiered(partition, entry)
        if cutoff_us is not None and (expired := manifest.expired(cutoff_us)):
            if hook is not None:  # out of the table before the files go
                hook.on_expired(partition, expired)
            manifest = manifest.without(expired)
            save_manifest(tier_url, manifest, epoch=epoch)
            for gone in expired:
                remove(join(tier_url, gone.file))
            logger.info(
                "tier retention removed %d files partition=%d tier=%s",
                len(expired),
                partition,
                tier_url,
            )
    except FluvioError as exc:
        return TierOutcome(manifest, str(exc), written)
    except Exception as exc:  # a hook's own failure: reported like a tier error
        logger.exception("tiering partition=%d tier=%s failed", partition, tier_url)
        return TierOutcome(manifest, f"{type(exc).__name__}: {exc}", written)
    return TierOutcome(manifest, None, written)


class TierKeeper:
    """Runs tiering rounds over the tiered partitions of an SPU (module docstring).

    Args:
        logs: the open logs by partition name.
        replicas: the replica entries by partition name.
        is_leader: whether this SPU leads a partition now (a running leader controller).
        on_status: called with a partition name and its new ``TIER`` text.
        interval_s: round period.
        concurrency: tiering jobs at once.
        now_us: the wall clock (tier retention).
    """

    def __init__(
        self,
        logs: Callable[[], Mapping[str, ReplicaLog]],
        replicas: Callable[[], Mapping[str, Replica]],
        is_leader: Callable[[str], bool],
        *,
        on_status: Callable[[str, str], None] | None = None,
        interval_s: float = 1.0,
        concurrency: int = 2,
        now_us: Callable[[], int],
    ) -> None:
        self._logs = logs
        self._replicas = replicas
        self._is_leader = is_leader
        self._on_status = on_status
        self.interval_s = interval_s
        self._slots = asyncio.Semaphore(concurrency)
        self._now_us = now_us
        self._jobs: dict[str, asyncio.Task[None]] = {}
        self._ends: dict[str, int | None] = {}
        self._errors: dict[str, str | None] = {}
        self._replayed: set[str] = set()
        # the leadership (partition uid, leader epoch) whose leftovers are gone
        self._swept: dict[str, tuple[str | None, int]] = {}
        self.status: dict[str, str] = {}

    def floor(self, name: str) -> int | None:
        """Local retention keeps offsets from here on: the tier's end, 0 while it is not
        known (nothing is deleted), ``None`` for a partition that is not tiered."""
        replica = self._replicas().get(name)
        if replica is None or replica.spec.tier is None:
            return None
        end = self._ends.get(name)
        return 0 if end is None else end

    async def run(self) -> None:
        """Forever: one round per ``interval_s``."""
        try:
            while True:
                await asyncio.sleep(self.interval_s)
                await self.round()
        finally:
            for job in self._jobs.values():
                job.cancel()
            await asyncio.gather(*self._jobs.values(), return_exceptions=True)

    async def round(self) -> None:
        """Start a job for every tiered partition that has none running."""
        logs, replicas = dict(self._logs()), dict(self._replicas())
        for name in [n for n in self._jobs if self._jobs[n].done()]:
            del self._jobs[name]
        for name in [n for n in self._replayed if not self._is_leader(n)]:
            self._replayed.discard(name)  # a later leadership replays again
        for name, log in logs.items():
            replica = replicas.get(name)
            if replica is None or replica.spec.tier is None or name in self._jobs:
                continue
            job = (
                self._lead(name, log, replica)
                if self._is_leader(name)
                else self._follow(name, replica)
            )
            self._jobs[name] = asyncio.get_running_loop().create_task(job, name=f"tier-{name}")

    async def wait_idle(self) -> None:
        """Wait for the running jobs (tests and shutdown)."""
        await asyncio.gather(*self._jobs.values(), return_exceptions=True)

    async def _follow(self, name: str, replica: Replica) -> None:
        url = replica.spec.tier
        assert url is not None
        try:
            manifest = await asyncio.to_thread(load_manifest, url, replica.partition)
        except FluvioError as exc:
            logger.debug("tier manifest not readable partition=%s: %s", name, exc)
            return
        self._ends[name] = manifest.end_offset

    async def _lead(self, name: str, log: ReplicaLog, replica: Replica) -> None:
        url = replica.spec.tier
        assert url is not None
        async with self._slots:
            try:
                manifest = await asyncio.to_thread(load_manifest, url, replica.partition)
            except FluvioError as exc:
                self._report(name, url, None, str(exc))
                return
            leadership = (replica.uid, replica.leader_epoch)
            if self._swept.get(name) != leadership:
                try:
                    await asyncio.to_thread(self._sweep, url, replica)
                except FluvioError as exc:
                    self._report(name, url, manifest, str(exc))
                    return
                self._swept[name] = leadership
            if log.closed:
                return
            pieces = pieces_to_tier(log.segments, manifest.end_offset, log.hw)
            # Taken on the loop, where the log is consistent; the thread only reads bytes.
            slices = [log.read(p.start, max(1, 1 << 31), end_offset=p.end) for p in pieces]
            retention = replica.spec.retention_secs
            cutoff = None if retention is None else self._now_us() - retention * 1_000_000
            replay = name not in self._replayed
            outcome = await asyncio.to_thread(
                tier_slices,
                url,
                manifest,
                slices,
                tier_schema(replica.spec),
                table_hook(replica.spec, url),
                replay=replay,
                cutoff_us=cutoff,
                epoch=replica.leader_epoch,
            )
            if outcome.error is None:
                self._replayed.add(name)
            self._report(name, url, outcome.manifest, outcome.error)

    @staticmethod
    def _sweep(url: str, replica: Replica) -> None:
        """Remove the temporary files earlier writers of the partition left (a thread)."""
        removed = remove_stale_temps(url, replica.partition, replica.leader_epoch)
        if removed:
            logger.info(
                "removed %d temporary files left in the tier partition=%s epoch=%d: %s",
                len(removed),
                replica.name,
                replica.leader_epoch,
                ", ".join(removed),
            )

    def _report(
        self, name: str, url: str, manifest: TierManifest | None, error: str | None
    ) -> None:
        if manifest is not None:
            self._ends[name] = manifest.end_offset
        before = self._errors.get(name)
        if error is not None and error != before:
            logger.error("tiering failed partition=%s tier=%s: %s", name, url, error)
        elif error is None and before is not None:
            logger.info("tiering works again partition=%s tier=%s", name, url)
        self._errors[name] = error
        if manifest is None:
            text = tier_status_text(error, None, None, 0)
        else:
            files = len(manifest.files)
            text = tier_status_text(error, manifest.start_offset, manifest.end_offset, files)
        self.status[name] = text
        if self._on_status is not None:
            self._on_status(name, text)  # the receiver keeps it if it changed
