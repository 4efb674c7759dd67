"""The leader controller: one per partition this SPU leads.

Theory of operation. The controller owns the replica's log while it leads and is the
only writer. It

- **appends produce requests**: frame headers are read (never the records), the
  idempotent producer table (``spu.producers``) drops retried frames and answers them
  with their original offsets, the rest is appended with offsets assigned here, and the
  request is answered per ``acks``: at once (``none``, ``leader``) or once the high
  watermark passes its last record (``all``; refused up front with
  ``NotEnoughReplicasError`` when the in-sync set is smaller than the topic's
  ``min_in_sync_replicas``, and failed the same way, at once, when the set shrinks
  below it while the request waits);
- **tracks its followers** (``spu.in_sync``, by the rules of ``spu.replication``): each
  follower's LEO reports, the in-sync set (laggards past ``replica_max_lag_ms`` evicted,
  followers that caught up re-admitted, followers whose SPU went offline dropped at
  once) and the high watermark (min LEO over the in-sync set, never backwards, and
  frozen while the set is smaller than ``min_in_sync_replicas``: a leader cut off from
  its followers commits nothing only it holds), re-evaluated on every report, every
  append and on a timer, so a dead follower cannot stall the high watermark while enough
  others are in sync. With an SC (``on_status`` set) a **shrink waits for the SC**: the
  dropped follower stays in force while the live status proposing the smaller set
  travels to the SC, which accepts it only from the current leader at the current leader
  epoch (``isr_accepted``); a leader cut off from the SC cannot shrink, so its
  ``acks=all`` produces time out instead of being acknowledged on its own copy;
- **syncs a follower** that opens a stream (``sync_follower``, ``spu.follower_sync``):
  of the frames it lists past its high watermark, the prefix matching this log is kept;
- **serves reads** up to the high watermark (committed) or the LEO (uncommitted), and
  wakes subscribed streams on every change;
- **checks what it serves from sealed segments** (``spu.sealed_reads``, crc per frame): a
  damaged frame (bit rot) is recorded like a damage the scrub found (``damaged``):
  the reader gets the intact frames before it, then ``NotLeaderError`` while a healthy
  in-sync replica exists (the SC moves leadership there, and this replica repairs as its
  follower), or ``CorruptSegmentError`` naming the range when none does;
- **reports** its live replica status through ``on_status`` (coalesced by the SC link):
  its own replica ``damaged`` while its log has a recorded damage (the SC then elects a
  healthy replica), and followers that repair (``repair_from``) as repairing/repaired;
- **knows its leader epoch** (``leader_epoch``, from the SC's replica entry): requests
  that carry one are checked against it (``check_leader_epoch``), and a newer epoch
  pushed while it keeps leading wakes the streams, which end if they were opened under
  the older one.

A new leader starts with the in-sync set of every follower whose SPU is online, each
counted at the leader's checkpointed high watermark until it reports, and rebuilds the
producer table from the frame headers of its log. Everything runs on one event loop;
no method yields between reading and changing state.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable

from spark_stream.errors import (
    CorruptSegmentError,
    FencedLeaderEpochError,
    FluvioError,
    NotEnoughReplicasError,
    NotLeaderError,
    OffsetNotAvailableError,
    RequestTimeoutError,
    StorageError,
    UnknownLeaderEpochError,
)
from spark_stream.protocol import Acks, Isolation, ProduceResponse
from spark_stream.protocol.control import LrsStatus, Replica
from spu.follower_sync import sync_point
from spu.frames import check_codec, check_schemas, log_headers, split_request
from spu.in_sync import InSyncTracker
from spu.live_status import LastStatus, status_inputs
from spu.notify import OffsetWaiters, Subscribers
from spu.private_messages import ReplicaOffsets
from spu.producers import ProducerTable
from spu.replication import LagPolicy, check_ack_all
from spu.sealed_reads import SealedReadCheck
from spu.storage import LogSlice, ReplicaLog
from spu.storage.scrub import Damage
from spu.ticker import Ticker, shared_ticker
from spu.traffic import PartitionTraffic

__all__ = ["LeaderController", "check_leader_epoch", "monotonic_ms"]

logger = logging.getLogger(__name__)

_generations = itertools.count(1)


def monotonic_ms() -> int:
    """Milliseconds of the monotonic clock."""
    return int(time.monotonic() * 1000)


def check_leader_epoch(name: str, current: int, requested: int) -> None:
    """Refuse a request whose leader epoch is not this replica's (KIP-320).

    Args:
        name: the partition, for the message.
        current: the leader epoch this SPU holds for the partition.
        requested: the epoch the request carries; -1 (an old client) is not checked.

    Raises:
        FencedLeaderEpochError: ``requested`` is older: the requester's metadata is stale.
        UnknownLeaderEpochError: ``requested`` is newer: this SPU has not heard of it yet.
    """
    if requested < 0 or requested == current:
        return
    if requested < current:
        raise FencedLeaderEpochError(
            f"{name}: leader epoch {requested} is fenced, the current one is {current}"
        )
    raise UnknownLeaderEpochError(
        f"{name}: leader epoch {requested} is not known here yet (holding {current})"
    )


class LeaderController:
    """Leads one partition replica: produce, consume, follower tracking, LRS.

    Args:
        replica: the partition as the SC pushed it (this SPU is its leader).
        log: the replica's open log (owned by the dispatcher, written only here).
        spu_id: this SPU.
        max_lag_ms: a follower not caught up for longer is evicted from the in-sync set.
        max_batch_bytes: largest produce frame accepted.
        is_online: whether an SPU is online (from the SC's SPU specs).
        on_status: called with the partition name when the live status changed.
        clock: monotonic milliseconds (injectable for tests).
        traffic: where produce and fetch totals go (the dispatcher's, per partition).
    """

    def __init__(
        self,
        replica: Replica,
        log: ReplicaLog,
        *,
        spu_id: int,
        max_lag_ms: int,
        max_batch_bytes: int,
        is_online: Callable[[int], bool] | None = None,
        on_status: Callable[[str], None] | None = None,
        clock: Callable[[], int] = monotonic_ms,
        traffic: PartitionTraffic | None = None,
    ) -> None:
        self.name = replica.name
        self.topic, self.partition = replica.topic, replica.partition
        self.spu_id = spu_id
        self.log = log
        self.tier_status: str | None = None
        """The tiering state the SPU's ``TierKeeper`` last reported (sent with the LRS)."""
        self.generation = next(_generations)
        self.max_batch_bytes = max_batch_bytes
        self.policy = LagPolicy(max_lag_ms=max_lag_ms)
        self._on_status = on_status
        self._clock = clock
        self.traffic = traffic if traffic is not None else PartitionTraffic()
        self._replica = replica
        self._in_sync = InSyncTracker(
            spu_id,
            self.policy,
            is_online=is_online or (lambda _spu: True),
            sc_confirms=on_status is not None,
        )
        self._sealed = SealedReadCheck()  # what reads from sealed segments checked
        self._producers = ProducerTable()
        self._subscribers = Subscribers()
        self._waiters = OffsetWaiters()
        self._epoch_start = 0
        """The LEO when this leadership began: a HW below it may lag what was reported."""
        self._stopped = False
        self._started = False
        self._ticker: Ticker | None = None
        self._last_status = LastStatus()

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Rebuild producer state from the log, seed the followers, start the timer."""
        started = time.monotonic()
        self._producers = ProducerTable.rebuild(log_headers(self.log))
        now = self._clock()
        self._in_sync.seed(self._replica.replicas, self.log.hw, self.log.leo, now, initial=True)
        self._epoch_start = self.log.leo
        self._started = True
        # Before anything is served: the checkpointed HW can be up to a checkpoint period
        # old (0 after a crash before the first one); alone in its in-sync set (RF 1) the
        # leader's HW is its LEO, and a consumer at the end must not be sent back to it.
        self._refresh(now)
        tick = min(max(self.policy.max_lag_ms / 4000, 0.05), 1.0)
        self._ticker = shared_ticker(tick)  # one timer for the SPU's leaders of this period
        self._ticker.add(self, self._tick)
        logger.info(
            "leader started partition=%s leo=%d hw=%d isr=%s producers=%d scan_s=%.3f",
            self.name,
            self.log.leo,
            self.log.hw,
            sorted(self._in_sync.isr),
            len(self._producers),
            time.monotonic() - started,
        )
        self._report()

    async def stop(self) -> None:
        """Stop leading: fail waiting produces and end streams with ``NotLeaderError``."""
        if self._stopped:
            return
        self._stopped = True
        if self._ticker is not None:
            self._ticker.discard(self)
        self._waiters.fail_all(NotLeaderError(f"SPU {self.spu_id} stopped leading {self.name}"))
        self._subscribers.notify()
        logger.info(
            "leader stopped partition=%s leo=%d hw=%d", self.name, self.log.leo, self.log.hw
        )

    @property
    def stopped(self) -> bool:
        """True once this controller no longer leads."""
        return self._stopped

    @property
    def leader_epoch(self) -> int:
        """The leader epoch this SPU leads the partition at."""
        return self._replica.leader_epoch

    def update(self, replica: Replica) -> None:
        """Apply a changed spec while still leading (replicas, min in-sync replicas, a
        newer leader epoch: the streams wake to re-check it)."""
        new_epoch = replica.leader_epoch != self._replica.leader_epoch
        self._replica = replica
        self._in_sync.seed(
            replica.replicas, self.log.hw, self.log.leo, self._clock(), initial=False
        )
        self._refresh(self._clock(), force=True)
        if new_epoch:
            self._subscribers.notify()

    def check(self) -> None:
        """Re-evaluate the in-sync set and high watermark now (the timer does it too)."""
        self._refresh(self._clock())

    def spu_offline(self, spu_id: int) -> None:
        """A follower's SPU went offline: drop it from the in-sync set at once."""
        if self._in_sync.offline(spu_id):
            self._refresh(self._clock(), force=True)

    # -- offsets and status ----------------------------------------------------------

    @property
    def followers(self) -> tuple[int, ...]:
        """The follower SPUs of the partition."""
        return self._in_sync.followers

    @property
    def in_sync(self) -> frozenset[int]:
        """The in-sync set, this SPU included."""
        return self._in_sync.isr

    @property
    def min_in_sync_replicas(self) -> int:
        """The topic's ``min_in_sync_replicas``."""
        return self._replica.spec.min_in_sync_replicas

    @property
    def hw(self) -> int:
        """The high watermark."""
        return self.log.hw

    @property
    def leo(self) -> int:
        """The log end offset."""
        return self.log.leo

    def check_hw_current(self) -> None:
        """Refuse to report a HW that may be below one reported before (Kafka's rule).

        A new leadership (a restart, a promoted follower) starts from a HW that may lag:
        the checkpoint, or what the follower last heard. Every record below this
        leadership's starting LEO may have been committed and reported, so until the HW
        reaches it, offset requests get the retriable ``OffsetNotAvailableError``
        (followers' first fetches move it, in milliseconds; a follower that never
        fetches leaves the in-sync set after ``max_lag_ms``).

        Raises:
            OffsetNotAvailableError: the HW is below the LEO this leadership began with.
        """
        self._check_leading()
        if self.log.hw < self._epoch_start:
            raise OffsetNotAvailableError(
                f"{self.name}: high watermark {self.log.hw} is below the leader's start "
                f"{self._epoch_start} until its followers report"
            )

    @property
    def log_start(self) -> int:
        """The first offset still stored."""
        return self.log.log_start_offset

    def follower_lag(self) -> dict[int, int]:
        """Records each follower is behind this log's end, as this leader last heard
        (-1: no report since this leader started, or its SPU is offline)."""
        return self._in_sync.lag(self.log.leo)

    @property
    def replica_count(self) -> int:
        """How many replicas the partition has (the leader included)."""
        return len(self._replica.replicas)

    def status(self) -> LrsStatus:
        """The live replica status to report to the SC (the same object while unchanged)."""
        log = self.log
        return self._last_status.get(
            status_inputs(
                self.spu_id,
                self._replica,
                hw=log.hw,
                leo=log.leo,
                reported=self._in_sync.reported,
                damage=log.damage,
                progress=self._in_sync.progress,
                repairs=self._in_sync.repairs,
                log_start_offset=log.log_start_offset,
                size=log.size_bytes,
                tier=self.tier_status,
            )
        )

    def isr_accepted(self, reported: LrsStatus) -> None:
        """The SC accepted ``reported`` (a status this controller built): apply its shrink.

        A status from another leadership (an older epoch) is ignored; members the SC's
        set lacks leave only if the lag rules still drop them (``after_shrink_accepted``).
        """
        status = reported.status
        if self._stopped or status.leader_epoch != self.leader_epoch:
            return
        accepted = {r.spu_id for r in status.lrs if r.in_sync}
        before = self._in_sync.isr
        if before <= accepted:
            return  # no shrink in it: nobody leaves
        now = self._clock()
        if self._in_sync.accept(accepted, self.log.leo, self.log.hw, now):
            logger.info(
                "in-sync set shrink accepted by the SC partition=%s isr=%s was=%s epoch=%d",
                self.name,
                sorted(self._in_sync.isr),
                sorted(before),
                self.leader_epoch,
            )
            self._refresh(now)

    def subscribe(self, event: asyncio.Event) -> None:
        """Set ``event`` on every change (frames, high watermark, leadership lost)."""
        self._subscribers.add(event)

    def unsubscribe(self, event: asyncio.Event) -> None:
        """Stop setting ``event``."""
        self._subscribers.discard(event)

    def wake(self) -> None:
        """Set the subscribers' events without a change here (a delivery gate changed:
        group streams re-check it)."""
        self._subscribers.notify()

    # -- produce and read ------------------------------------------------------------

    async def produce(self, tail: memoryview, acks: Acks, timeout_ms: int) -> ProduceResponse:
        """Append a produce request's frames and answer per ``acks``.

        Raises:
            NotLeaderError: this controller stopped leading.
            CorruptFrameError, RecordTooLargeError, InvalidRequestError: bad frames, or
                frames of another codec than the topic stores; nothing was appended.
            SchemaMismatchError: frames whose columns are not the typed topic's (or
                typed frames to an untyped topic); nothing was appended.
            OutOfOrderSequenceError, DuplicateSequenceError: idempotence violations.
            NotEnoughReplicasError: ``acks=all`` with too few in-sync replicas.
            RequestTimeoutError: ``acks=all`` not committed within ``timeout_ms``.
        """
        self._check_leading()
        headers, frames = split_request(tail, self.max_batch_bytes)
        check_codec(headers, self._replica.spec.compression.value, self.name)
        check_schemas(headers, frames, self._replica.spec.topic_schema, self.name)
        if acks is Acks.ALL:
            check_ack_all(self._in_sync.isr, self.min_in_sync_replicas)
        plan = self._producers.plan(headers, self.log.leo)
        if plan.append:
            leo_before = self.log.leo
            appended = [frames[i] for i in plan.append]
            try:
                bases = self.log.append_produced(appended)
            except StorageError as exc:  # e.g. the disk is full: the operator must know
                logger.error(
                    "append failed partition=%s dir=%s: %s", self.name, self.log.directory, exc
                )
                raise
            if bases != [plan.offsets[i] for i in plan.append]:
                raise StorageError(f"{self.name}: the log assigned offsets {bases}")
            self._producers.commit(plan)
            self.traffic.produced(sum(f.nbytes for f in appended), self.log.leo - leo_before)
            self._refresh(self._clock())
        if acks is Acks.ALL:
            await self._wait_committed(plan.end_offset, timeout_ms)
        elif plan.append and self._subscribers:
            await asyncio.sleep(0)  # the readers this append woke push before its ack
        return ProduceResponse(plan.offsets[0], self.log.leo, self.log.hw)

    def read(self, offset: int, max_bytes: int, isolation: Isolation) -> LogSlice:
        """Whole frames from the one holding ``offset``, visible per ``isolation``.

        Raises:
            NotLeaderError: this controller stopped leading.
            OffsetOutOfRangeError: ``offset`` is outside the log.
        """
        self._check_leading()
        end = self.log.hw if isolation is Isolation.COMMITTED else None
        piece = self.log.read(offset, max_bytes, end_offset=end)
        if piece.length and piece.base_offset < self.log.active_base:
            return self._check_sealed(piece)
        return piece

    def damaged(self, damage: Damage) -> None:
        """A frame of this log is damaged (scrub or read): record it, report at once.

        The SC then elects a healthy in-sync replica if one is online; this SPU repairs
        as its follower (the log is cut at ``log.damage`` when it starts following).
        """
        self._sealed.forget()  # checked before the damage came: check again
        if self.log.damage is None or damage.offset < self.log.damage.offset:
            self.log.damage = damage
            logger.error("damaged replica partition=%s %s", self.name, damage.describe())
        self._report()

    def _check_sealed(self, piece: LogSlice) -> LogSlice:
        """``piece`` cut before its first damaged frame; an error when that is the first."""
        found = self._sealed.check(piece, self.log)
        if found.damage is None:
            return piece
        damage = found.damage
        self.damaged(damage)
        if found.piece is not None:
            return found.piece
        if len(self._in_sync.isr) > 1:  # in-sync followers hold every committed record intact
            raise NotLeaderError(
                f"SPU {self.spu_id} holds a damaged copy of {self.name} at offset "
                f"{damage.offset}; leadership moves to a healthy replica"
            )
        raise CorruptSegmentError(
            f"{self.name}: offsets [{damage.offset}, {damage.end_offset}) are damaged on SPU "
            f"{self.spu_id} and no healthy in-sync replica holds them: {damage.reason}"
        )

    def offset_for_timestamp(self, ts_us: int) -> int | None:
        """The first offset whose timestamp is at least ``ts_us`` (up to the LEO)."""
        self._check_leading()
        return self.log.offset_for_timestamp(ts_us)

    # -- followers -------------------------------------------------------------------

    def follower_report(self, spu_id: int, leo: int) -> bool:
        """Fold a follower's LEO report in; False when it is not taken.

        A report from an SPU that is not a follower, or past this log's end (a follower
        that has not synced with this leader yet), is ignored.
        """
        if self._stopped or not self._in_sync.follows(spu_id) or leo > self.log.leo:
            return False
        now = self._clock()
        # Only its catch-up time moved (same LEO, already in sync): nothing else to decide.
        if self._in_sync.record(spu_id, leo, self.log.leo, now) and self._quiet(now):
            self._in_sync.stay_quiet()
            return True
        self._refresh(now)
        return True

    def sync_follower(self, spu_id: int, offsets: ReplicaOffsets) -> tuple[int, bool]:
        """Where a follower opening a stream must cut its log (``sync_point``), and
        whether to reset it; the cut is taken as the follower's report.

        Returns:
            ``(offset, reset)``: the follower's LEO after the cut.
        """
        self._check_leading()
        if offsets.repair_from is not None:
            self._in_sync.repairs[spu_id] = offsets.repair_from
        point, reset = sync_point(self.log, offsets)
        if self._in_sync.follows(spu_id):
            now = self._clock()
            self._in_sync.record(spu_id, point, self.log.leo, now)
            self._refresh(now, force=True)
        return point, reset

    # -- internals -------------------------------------------------------------------

    def _check_leading(self) -> None:
        if self._stopped:
            raise NotLeaderError(f"SPU {self.spu_id} no longer leads {self.name}")

    def _refresh(self, now: int, *, force: bool = False) -> None:
        """Re-evaluate the in-sync set and the high watermark; wake readers, report to the SC.

        Readers are woken on any change; the SC hears at once only what the step says
        (``InSyncTracker.refresh``), so a busy partition does not write its status to the
        KV store on every append: LEO and HW travel with the SC link's periodic report.
        """
        if self._stopped or not self._started:
            return
        leo, hw = self.log.leo, self.log.hw
        step = self._in_sync.refresh(leo, hw, self.min_in_sync_replicas, now, force=force)
        if step.proposed is not None:
            logger.info(
                "in-sync set shrink proposed to the SC partition=%s isr=%s proposed=%s hw=%d",
                self.name,
                sorted(step.isr),
                sorted(step.proposed),
                hw,
            )
        if step.isr != step.previous:
            logger.info(
                "in-sync set changed partition=%s isr=%s was=%s hw=%d leo=%d",
                self.name,
                sorted(step.isr),
                sorted(step.previous),
                step.hw,
                leo,
            )
        if step.hw != hw:
            self.log.hw = step.hw
        self._waiters.advance(step.hw, self._acks_all_error)
        error = self._acks_all_error()
        if error is not None:  # too few replicas to commit: no pending acks=all will be
            self._waiters.fail_all(error)
        if step.changed:
            self._subscribers.notify()
        if step.report:
            self._report()

    def _quiet(self, now: int) -> bool:
        """Whether ``_refresh`` would change nothing now (``InSyncTracker.quiet``) with
        no produce waiting."""
        return self._in_sync.quiet(now, self.log.leo, self.log.hw) and not self._waiters

    def _acks_all_error(self) -> FluvioError | None:
        if len(self._in_sync.isr) >= self.min_in_sync_replicas:
            return None
        return NotEnoughReplicasError(
            f"{self.name}: records not committed: {len(self._in_sync.isr)} in-sync replicas "
            f"{sorted(self._in_sync.isr)}, acks=all needs {self.min_in_sync_replicas}"
        )

    async def _wait_committed(self, end_offset: int, timeout_ms: int) -> None:
        if end_offset <= self.log.hw:
            error = self._acks_all_error()
            if error is not None:
                raise error
            return
        future = self._waiters.wait_for(end_offset)
        try:
            await asyncio.wait_for(future, timeout_ms / 1000)
        except TimeoutError:
            raise RequestTimeoutError(
                f"{self.name}: offsets below {end_offset} not committed within {timeout_ms} ms "
                f"(hw {self.log.hw}, in sync {sorted(self._in_sync.isr)})"
            ) from None

    def _report(self) -> None:
        if self._on_status is not None:
            self._on_status(self.name)

    def _tick(self) -> None:
        """The timer: evict followers silent past the max lag (skipped while quiet)."""
        now = self._clock()
        if not self._quiet(now):
            self._refresh(now)
