"""A leader's view of its followers, sans I/O: progress, in-sync set, high watermark.

Theory of operation. ``spu.replication`` holds the rules as free functions; this class
holds the state they apply to during one leadership and applies them in one step
(``refresh``): the in-sync set the lag rules want now, what of it is in force (when an
SC confirms shrinks, a dropped follower stays until the SC accepted the smaller set:
``proposed``, then ``accept``) and the high watermark over the set in force. The leader
controller feeds it its log's LEO and HW and the clock, and does what a step says (sets
the HW, wakes readers and waiting produces, reports to the SC, logs). Between steps,
``quiet`` says until when a step would change nothing, so timer ticks and repeated
follower reports skip it. Nothing here touches the log, the network or the clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from spu.replication import (
    FollowerProgress,
    LagPolicy,
    after_shrink_accepted,
    high_watermark,
    in_sync_change,
    lag_deadline,
    new_follower,
    next_in_sync_set,
    record_follower_report,
)

__all__ = ["InSyncStep", "InSyncTracker"]


@dataclass(frozen=True, slots=True)
class InSyncStep:
    """What one re-evaluation decided.

    Attributes:
        isr: the in-sync set in force now (the leader included).
        previous: the in-sync set in force before.
        proposed: a smaller set newly proposed to the SC (``None``: none, or unchanged).
        hw: the high watermark now.
        changed: the set, the HW or the LEO moved since the last step (readers wake).
        report: the SC must hear of this step now.
    """

    isr: frozenset[int]
    previous: frozenset[int]
    proposed: frozenset[int] | None
    hw: int
    changed: bool
    report: bool


class InSyncTracker:
    """Follower progress, the in-sync set and the shrink awaiting the SC, for one leader.

    Args:
        leader: the leading SPU.
        policy: when a follower lags.
        is_online: whether an SPU is online (from the SC's SPU specs).
        sc_confirms: a shrink takes effect only once the SC accepted it.
    """

    def __init__(
        self,
        leader: int,
        policy: LagPolicy,
        *,
        is_online: Callable[[int], bool],
        sc_confirms: bool,
    ) -> None:
        self.leader = leader
        self.policy = policy
        self._is_online = is_online
        self._sc_confirms = sc_confirms
        self.followers: tuple[int, ...] = ()
        """The follower SPUs of the partition."""
        self.progress: dict[int, FollowerProgress | None] = {}
        """Each follower's last report (``None``: none this leadership, or it is offline)."""
        self.isr: frozenset[int] = frozenset({leader})
        """The in-sync set in force, the leader included."""
        self.proposed: frozenset[int] | None = None
        """A smaller in-sync set reported for the SC to accept (``None``: none pending)."""
        self.repairs: dict[int, int] = {}
        """Follower -> where it cut its damaged log."""
        self._last_leo = -1
        # Until _quiet_until (ms), while the LEO and HW stay where the last step left
        # them, a step would change nothing (see ``quiet``).
        self._quiet_until = -math.inf
        self._quiet_hw = -1

    @property
    def reported(self) -> frozenset[int]:
        """The in-sync set to report: a proposed shrink is what the SC must accept."""
        return self.isr if self.proposed is None else self.proposed

    def seed(self, replicas: Iterable[int], hw: int, leo: int, now: int, *, initial: bool) -> None:
        """Take the partition's replicas: new followers whose SPU is online start in
        sync, counted at ``hw`` until they report; known ones keep their state (unless
        ``initial``: a new leadership starting at LEO ``leo``)."""
        followers = tuple(s for s in replicas if s != self.leader)
        progress: dict[int, FollowerProgress | None] = {}
        isr = {self.leader}
        for spu in followers:
            if not initial and spu in self.progress:
                progress[spu] = self.progress[spu]
                if spu in self.isr:
                    isr.add(spu)
            elif self._is_online(spu):
                progress[spu] = new_follower(hw, leo, now, in_sync=True)
                isr.add(spu)
            else:
                progress[spu] = None
        self.followers, self.progress, self.isr = followers, progress, frozenset(isr)
        if initial:
            self._last_leo = leo

    def follows(self, spu_id: int) -> bool:
        """Whether ``spu_id`` is a follower of the partition."""
        return spu_id in self.progress

    def lag(self, leo: int) -> dict[int, int]:
        """Records each follower is behind ``leo``, as last heard (-1: no report since
        this leadership began, or its SPU is offline)."""
        return {
            spu: -1 if progress is None else max(leo - progress.leo, 0)
            for spu, progress in self.progress.items()
        }

    def offline(self, spu_id: int) -> bool:
        """A follower's SPU went offline: forget its progress; False when it was not known."""
        if spu_id in self.progress and self.progress[spu_id] is not None:
            self.progress[spu_id] = None
            return True
        return False

    def record(self, spu_id: int, follower_leo: int, leader_leo: int, now: int) -> bool:
        """Fold a follower's LEO in (``spu_id`` must be a follower).

        Returns:
            True when only its catch-up time moved (same LEO, already in sync).
        """
        before = self.progress[spu_id]
        after = record_follower_report(before, follower_leo, leader_leo, now)
        self.progress[spu_id] = after
        return before is not None and after.leo == before.leo and spu_id in self.isr

    def quiet(self, now: int, leo: int, hw: int) -> bool:
        """Whether a step would change nothing now: the LEO and HW where the last step
        left them, the in-sync set what the lag rules wanted then and none of its
        followers lagging yet (the caller adds its own conditions: no produce waiting)."""
        return now <= self._quiet_until and leo == self._last_leo and hw == self._quiet_hw

    def stay_quiet(self) -> None:
        """A report changed nothing but a catch-up time: quiet until the next lag is due."""
        self._quiet_until = lag_deadline(self.leader, self.isr, self.progress, self.policy)

    def accept(self, accepted: Collection[int], leo: int, hw: int, now: int) -> bool:
        """The SC accepted a status with in-sync set ``accepted``: apply its shrink.

        Members the SC's set lacks leave only if the lag rules still drop them.

        Returns:
            True when the in-sync set changed.
        """
        wanted = self._wanted(leo, hw, now)
        isr = after_shrink_accepted(self.isr, accepted, wanted, self.leader)
        if isr == self.isr:
            return False
        self.isr = isr
        return True

    def refresh(
        self, leo: int, hw: int, min_in_sync_replicas: int, now: int, *, force: bool
    ) -> InSyncStep:
        """Re-evaluate the in-sync set and the high watermark at LEO ``leo``, HW ``hw``.

        The SC hears at once of a changed in-sync set or proposal (what elections depend
        on) or when ``force``d; LEO and HW alone travel with the periodic report.
        """
        wanted = self._wanted(leo, hw, now)
        change = in_sync_change(self.isr, wanted, sc_confirms=self._sc_confirms)
        isr = change.in_force
        # A member without progress (its SPU went offline) holds the HW where it is until
        # the SC accepted it out.
        leos = [
            hw if (p := self.progress.get(s)) is None else p.leo for s in isr if s != self.leader
        ]
        new_hw = high_watermark(leo, leos, hw, min_in_sync_replicas)
        previous = self.isr
        step = InSyncStep(
            isr=isr,
            previous=previous,
            proposed=change.proposed if change.proposed != self.proposed else None,
            hw=new_hw,
            changed=isr != previous or new_hw != hw or leo != self._last_leo,
            report=force or isr != previous or change.proposed != self.proposed,
        )
        self.proposed = change.proposed
        self.isr = isr
        self._last_leo = leo
        self._quiet_hw = new_hw
        self._quiet_until = (
            lag_deadline(self.leader, isr, self.progress, self.policy)
            if isr == wanted
            else -math.inf
        )
        return step

    def _wanted(self, leo: int, hw: int, now: int) -> frozenset[int]:
        """The in-sync set the lag rules want now (before the SC's say on a shrink)."""
        return next_in_sync_set(self.leader, self.isr, self.progress, leo, hw, now, self.policy)
