"""The leader's side of one follower's replication stream (``FOLLOWER_STREAM``).

Theory of operation. One session serves every replica a follower SPU holds of this
SPU, on one stream. Per replica it waits until this SPU leads it with the follower in
its replica set (a follower may connect before the leader received its spec), then:

1. **sync**: ``LeaderController.sync_follower`` compares the follower's tail signature
   with this log and the session pushes ``truncate_to`` (and ``reset``): the follower's
   LEO from now on;
2. **replicate**: frames from that position, at most ``max_bytes`` per push, straight
   from the log's memory map (never decoded), and an empty push when only the high
   watermark moved, so the follower's high watermark follows the leader's.

The session pushes from what it has sent, not from what the follower reported: the
stream is ordered and the follower appends every push or abandons the stream, so the two
agree. ``sent`` is also the most a follower's LEO report on this session may claim
(``spu.private_api`` clamps reports to it). If the replica's leader controller goes away
or is replaced (leadership lost and regained: the log may have changed meanwhile), the
session pushes an ``error`` for the replica once and stops serving it; the follower then
opens a fresh stream, which syncs every replica again. Replicas are served round robin;
the session sleeps on one event set by every involved leader controller and by the
dispatcher's role changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from spark_stream.errors import FluvioError, NotLeaderError
from spu.leader import LeaderController
from spu.private_messages import FollowerPush, ReplicaOffsets

__all__ = ["LeaderDirectory", "FollowerSession"]

logger = logging.getLogger(__name__)


class LeaderDirectory(Protocol):
    """What a session needs from the dispatcher."""

    def leader(self, name: str) -> LeaderController | None:
        """The running leader controller of a partition, if this SPU leads it."""
        ...

    def subscribe_roles(self, event: asyncio.Event) -> None:
        """Set ``event`` whenever leader controllers start or stop."""
        ...

    def unsubscribe_roles(self, event: asyncio.Event) -> None:
        """Stop setting ``event``."""
        ...


@dataclass(slots=True)
class _Replica:
    offsets: ReplicaOffsets
    leader: LeaderController | None = None
    position: int = 0
    sent_hw: int = -1
    done: bool = False


class FollowerSession:
    """Pushes for one follower SPU's replication stream.

    Args:
        directory: where leader controllers are found.
        follower: the follower's SPU id.
        replicas: per partition, the follower's offsets when it opened the stream.
        max_bytes: soft limit on the frames of one push.
    """

    def __init__(
        self,
        directory: LeaderDirectory,
        follower: int,
        replicas: dict[str, ReplicaOffsets],
        max_bytes: int,
    ) -> None:
        self.directory = directory
        self.follower = follower
        self.max_bytes = max_bytes
        self._replicas = {name: _Replica(offsets) for name, offsets in replicas.items()}
        self._event = asyncio.Event()

    def sent(self, name: str) -> int | None:
        """The end of what this session sent the follower of ``name`` (its LEO once it
        appended all of it); None before the replica synced on this session."""
        state = self._replicas.get(name)
        if state is None or state.leader is None:
            return None
        return state.position

    async def pushes(self) -> AsyncGenerator[FollowerPush, None]:
        """The stream's pushes, forever (the server cancels it when the stream ends)."""
        self.directory.subscribe_roles(self._event)
        try:
            while True:
                self._event.clear()
                pushed = False
                for name, state in self._replicas.items():
                    if state.done:
                        continue
                    push = self._next(name, state)
                    if push is not None:
                        pushed = True
                        if _hw_only(push):
                            # The consumers' streams this HW move woke push first: the
                            # follower's HW may lag a loop turn, a consumer's record not.
                            await asyncio.sleep(0)
                        yield push
                if not pushed:
                    await self._event.wait()
        finally:
            self.directory.unsubscribe_roles(self._event)
            for state in self._replicas.values():
                if state.leader is not None:
                    state.leader.unsubscribe(self._event)

    def _next(self, name: str, state: _Replica) -> FollowerPush | None:
        """The next push for one replica, or None when it has nothing to send."""
        leader = self.directory.leader(name)
        usable = leader is not None and not leader.stopped and self.follower in leader.followers
        if state.leader is not None and (not usable or leader is not state.leader):
            return self._give_up(
                name,
                state,
                NotLeaderError(
                    f"this SPU stopped leading {name} for follower {self.follower}; resync"
                ),
            )
        if not usable or leader is None:
            return None  # not (yet) the leader: wait for the dispatcher
        try:
            if state.leader is None:
                return self._sync(name, state, leader)
            piece = leader.log.read(state.position, self.max_bytes)
        except FluvioError as exc:  # e.g. retention passed the follower's position
            return self._give_up(name, state, exc)
        hw = leader.hw
        if piece.length:
            state.position, state.sent_hw = piece.next_offset, hw
            return FollowerPush(name, hw, leader.leo, leader.log_start, tail=[piece])
        if hw != state.sent_hw:
            state.sent_hw = hw
            return FollowerPush(name, hw, leader.leo, leader.log_start)
        return None

    def _sync(self, name: str, state: _Replica, leader: LeaderController) -> FollowerPush:
        point, reset = leader.sync_follower(self.follower, state.offsets)
        state.leader, state.position, state.sent_hw = leader, point, leader.hw
        leader.subscribe(self._event)
        logger.info(
            "follower synced partition=%s follower=%d truncate_to=%d reset=%s leo=%d",
            name,
            self.follower,
            point,
            reset,
            leader.leo,
        )
        return FollowerPush(
            name, leader.hw, leader.leo, leader.log_start, truncate_to=point, reset=reset
        )

    def _give_up(self, name: str, state: _Replica, error: FluvioError) -> FollowerPush:
        state.done = True
        if state.leader is not None:
            state.leader.unsubscribe(self._event)
            state.leader = None
        logger.info(
            "follower stream drops partition=%s follower=%d: %s", name, self.follower, error
        )
        return FollowerPush(name, error=error.code, message=str(error))


def _hw_only(push: FollowerPush) -> bool:
    """A push that only moves the follower's high watermark (no frames, sync or error)."""
    return not push.tail and push.truncate_to is None and push.error is None
