"""Replication math of a leader replica: in-sync set, high watermark, ``acks=all``.

Theory of operation (Kafka's model, in free functions the leader controller calls):

- The leader tracks each follower's ``FollowerProgress``: its last reported LEO and
  the last time it was **caught up**. A follower is caught up when its LEO reaches the
  leader's LEO at the moment of its report, or reaches what the leader's LEO was at
  its *previous* report (then it was caught up as of that previous report). The second
  rule keeps a steadily fetching follower in sync under continuous produce, when it can
  never equal a moving LEO exactly.
- **In sync** (``is_lagging`` is false): caught up within the last ``max_lag_ms`` and,
  when ``max_lag_records`` is set, no more than that many records behind the leader.
  The leader is always in sync with itself.
- **Eviction**: a member of the in-sync set that lags is dropped. **Re-admission**: a
  follower outside the set rejoins once it is not lagging *and* its LEO has reached the
  current high watermark, so admitting it can never pull the watermark down.
- **Below the watermark**: a member whose reported LEO falls below the high watermark
  lost committed records (a repair cut its damaged log) and is evicted at once, however
  recently it was caught up; it rejoins by the re-admission rule once repaired.
- **Shrinking is the SC's call** (Kafka's AlterPartition): when the leader reports to
  an SC, a member the rules above drop stays in force until the SC accepted a live
  status without it (checked there against the leader and its epoch);
  ``in_sync_change`` keeps it and names the proposed smaller set, and
  ``after_shrink_accepted`` applies the SC's answer. The high watermark therefore never
  passes what a dropped follower holds before the SC knows it is out: a leader cut off
  from the SC and its followers cannot commit what only it holds, while the SC elects
  one of them. Growing the set is local (a follower that caught up is in at once) and
  reported after.
- **High watermark** = min LEO over the in-sync set (leader included), never below its
  previous value: a record once committed stays committed.
- ``acks=all`` can be served only while the in-sync set (leader included) has at least
  ``min_in_sync_replicas`` members; a produce is acknowledged once HW passes its end.

Offsets: an LEO is the offset the next record will get; HW is exclusive the same way
(records below HW are committed).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from spark_stream.errors import InvalidRequestError, NotEnoughReplicasError

__all__ = [
    "LagPolicy",
    "FollowerProgress",
    "new_follower",
    "record_follower_report",
    "is_lagging",
    "next_in_sync_set",
    "lag_deadline",
    "InSyncChange",
    "in_sync_change",
    "after_shrink_accepted",
    "high_watermark",
    "can_ack_all",
    "check_ack_all",
    "is_committed",
]


@dataclass(frozen=True, slots=True)
class LagPolicy:
    """How far a follower may fall behind and stay in sync.

    Attributes:
        max_lag_ms: a follower not caught up for longer than this is evicted (Kafka's
            ``replica.lag.time.max.ms``, default 30 s).
        max_lag_records: when set, a follower more than this many records behind the
            leader's LEO is evicted at once, whatever the time.
    """

    max_lag_ms: int = 30_000
    max_lag_records: int | None = None

    def __post_init__(self) -> None:
        if self.max_lag_ms < 0:
            raise InvalidRequestError(f"max_lag_ms must be >= 0, got {self.max_lag_ms}")
        if self.max_lag_records is not None and self.max_lag_records < 0:
            raise InvalidRequestError(f"max_lag_records must be >= 0, got {self.max_lag_records}")


@dataclass(frozen=True, slots=True)
class FollowerProgress:
    """The leader's view of one follower.

    Attributes:
        leo: the follower's last reported log end offset.
        last_caught_up_ms: when it was last caught up (``None``: never).
        last_report_ms: when it last reported.
        leader_leo_at_report: the leader's LEO at that report.
    """

    leo: int
    last_caught_up_ms: int | None
    last_report_ms: int
    leader_leo_at_report: int


def new_follower(leo: int, leader_leo: int, now_ms: int, *, in_sync: bool) -> FollowerProgress:
    """Progress for a follower the leader starts tracking (new leader, new replica).

    A follower that was in sync when this leader took over gets a fresh grace period
    (caught up "now"), as Kafka does, so a leader change does not empty the in-sync set.
    """
    caught = now_ms if in_sync or leo >= leader_leo else None
    return FollowerProgress(leo, caught, now_ms, leader_leo)


def record_follower_report(
    progress: FollowerProgress | None, follower_leo: int, leader_leo: int, now_ms: int
) -> FollowerProgress:
    """Fold a follower's LEO report (a fetch or an offset update) into its progress.

    Args:
        progress: what the leader knew before (``None``: first report).
        follower_leo: the LEO the follower reports.
        leader_leo: the leader's LEO now.
        now_ms: the leader's clock, monotonic milliseconds.

    Raises:
        InvalidRequestError: the follower claims more records than the leader has.
    """
    if follower_leo > leader_leo:
        raise InvalidRequestError(
            f"follower LEO {follower_leo} is past the leader's LEO {leader_leo}"
        )
    if follower_leo >= leader_leo:
        caught: int | None = now_ms
    elif progress is not None and follower_leo >= progress.leader_leo_at_report:
        caught = progress.last_report_ms  # caught up to where the leader was back then
    else:
        caught = None
    before = progress.last_caught_up_ms if progress is not None else None
    if before is not None and (caught is None or before > caught):
        caught = before  # the last catch-up time never goes backwards
    return FollowerProgress(follower_leo, caught, now_ms, leader_leo)


def is_lagging(
    progress: FollowerProgress | None, leader_leo: int, now_ms: int, policy: LagPolicy
) -> bool:
    """Whether a follower is too far behind to count as in sync (see module docstring)."""
    if progress is None or progress.last_caught_up_ms is None:
        return True
    if now_ms - progress.last_caught_up_ms > policy.max_lag_ms:
        return True
    return policy.max_lag_records is not None and (
        leader_leo - progress.leo > policy.max_lag_records
    )


def next_in_sync_set(
    leader: int,
    current: Collection[int],
    followers: Mapping[int, FollowerProgress | None],
    leader_leo: int,
    hw: int,
    now_ms: int,
    policy: LagPolicy,
) -> frozenset[int]:
    """The in-sync set after evicting laggards and re-admitting followers that caught up.

    Args:
        leader: the leader's SPU id (always a member).
        current: the in-sync set so far (a member stays by the same rules a follower
            rejoins by: not lagging and LEO at or above ``hw``).
        followers: every follower replica and its progress (``None``: never reported).
            Members of ``current`` that are not followers any more are dropped.
        leader_leo: the leader's LEO.
        hw: the current high watermark; a follower rejoins only with LEO >= ``hw``.
        now_ms: the leader's clock.
        policy: the lag bounds.
    """
    members = {leader}
    for spu, progress in followers.items():
        if spu == leader or progress is None:
            continue
        if is_lagging(progress, leader_leo, now_ms, policy):
            continue
        if progress.leo < hw:
            continue  # lacks committed records: never in sync, member or not
        members.add(spu)
    return frozenset(members)


def lag_deadline(
    leader: int,
    members: Collection[int],
    followers: Mapping[int, FollowerProgress | None],
    policy: LagPolicy,
) -> float:
    """The last millisecond at which no follower in ``members`` lags by time alone.

    Until then, with no new report and no new record, ``next_in_sync_set`` keeps giving
    the same answer, so a leader's timer has nothing to re-evaluate. ``inf`` when no
    member can start lagging (no followers; a member without progress is held by other
    rules), ``-inf`` when one has never caught up.
    """
    deadline = math.inf
    for spu in members:
        progress = followers.get(spu)
        if spu == leader or progress is None:
            continue
        if progress.last_caught_up_ms is None:
            return -math.inf
        deadline = min(deadline, progress.last_caught_up_ms + policy.max_lag_ms)
    return deadline


@dataclass(frozen=True, slots=True)
class InSyncChange:
    """The in-sync set in force after a re-evaluation, and a shrink to ask the SC for.

    Attributes:
        in_force: the set the high watermark and ``acks=all`` count.
        proposed: the smaller set to report for the SC to accept (``None``: no shrink).
    """

    in_force: frozenset[int]
    proposed: frozenset[int] | None


def in_sync_change(
    current: Collection[int], wanted: Collection[int], *, sc_confirms: bool
) -> InSyncChange:
    """Apply what the lag rules want: growth at once, a shrink only once the SC accepts.

    Args:
        current: the in-sync set in force.
        wanted: ``next_in_sync_set``'s answer.
        sc_confirms: the leader reports to an SC, which must accept every shrink; when
            false (a leader without an SC: unit tests, a lone process) it shrinks at once.
    """
    want = frozenset(wanted)
    if not sc_confirms:
        return InSyncChange(want, None)
    in_force = want | frozenset(current)
    return InSyncChange(in_force, None if in_force == want else want)


def after_shrink_accepted(
    current: Collection[int], accepted: Collection[int], wanted: Collection[int], leader: int
) -> frozenset[int]:
    """The in-sync set once the SC accepted a live status listing ``accepted`` in sync.

    A member leaves only when the SC's set lacks it *and* the lag rules still drop it
    (``wanted``): a follower that caught up again since the report stays.
    """
    keep = set(accepted) | set(wanted) | {leader}
    return frozenset(s for s in current if s in keep)


def high_watermark(
    leader_leo: int,
    in_sync_leos: Iterable[int],
    previous: int,
    min_in_sync_replicas: int = 1,
) -> int:
    """The high watermark: min LEO over the in-sync set, never moving backwards.

    It stays where it is while the in-sync set (leader included) is smaller than
    ``min_in_sync_replicas``: a record is committed only once that many replicas hold
    it. The leader shrinks its in-sync set on its own (followers it stops hearing
    from), so a leader cut off from its followers and the SC would otherwise commit
    what only it holds; the SC elects another leader meanwhile, and those records,
    readable as committed, would vanish when the old leader rejoins as a follower.

    Args:
        leader_leo: the leader's LEO (the leader is always in the set).
        in_sync_leos: the LEOs of the in-sync followers.
        previous: the high watermark so far.
        min_in_sync_replicas: the topic's minimum in-sync set for a commit.

    Raises:
        InvalidRequestError: ``previous`` is past ``leader_leo`` (a watermark above the
            log end means the caller lost track; recovery clamps HW to LEO on load).
    """
    if previous > leader_leo:
        raise InvalidRequestError(f"high watermark {previous} is past the LEO {leader_leo}")
    leos = list(in_sync_leos)
    if not can_ack_all(1 + len(leos), min_in_sync_replicas):
        return previous
    lowest = min(leos, default=leader_leo)
    return max(previous, min(leader_leo, lowest))


def can_ack_all(in_sync_count: int, min_in_sync_replicas: int) -> bool:
    """Whether an ``acks=all`` produce may be accepted with this many in-sync replicas."""
    return in_sync_count >= min_in_sync_replicas


def check_ack_all(in_sync: Collection[int], min_in_sync_replicas: int) -> None:
    """Refuse an ``acks=all`` produce when the in-sync set is too small.

    Raises:
        NotEnoughReplicasError: fewer than ``min_in_sync_replicas`` in sync (retriable).
    """
    if not can_ack_all(len(in_sync), min_in_sync_replicas):
        raise NotEnoughReplicasError(
            f"{len(in_sync)} in-sync replicas {sorted(in_sync)}, "
            f"acks=all needs {min_in_sync_replicas}"
        )


def is_committed(end_offset: int, hw: int) -> bool:
    """Whether a batch ending before ``end_offset`` (exclusive) is committed under ``hw``."""
    return end_offset <= hw
