"""The member's side of the coordinator protocol, a base of ``AsyncGroupConsumer``.

``GroupMembership`` holds what the member does with the SC: join (new, or resume with
the last ``member_epoch`` and the partitions held), apply each assignment push (revoke,
commit, release, start pumps, the callbacks), heartbeats and the session check, reconnect
with capped backoff, auto-commit, and the ``max_poll_interval_ms`` leave and rejoin. The
theory of operation is ``group.py``'s module doc; what a push means for the partitions
held is decided by the pure functions of ``_group_assign``; reading (the pumps and
``stream_batches``) stays in ``group.py``, the per-partition API in ``_group_offsets``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import time
import uuid

from spark_stream.client.consumer._group_assign import (
    GrantAction,
    grant_action,
    held_revoked,
    lost_partitions,
    push_grants,
    tp_list,
)
from spark_stream.client.consumer._group_offsets import RETRY_S, TIMEOUT, GroupPartitions
from spark_stream.client.consumer._group_parts import (
    Item,
    Pump,
    RebalanceCallback,
    TopicPartition,
    call_back,
)
from spark_stream.client.consumer._group_session import SessionClock, heartbeat_pause
from spark_stream.errors import (
    ConnectionClosedError,
    FencedMemberError,
    FluvioError,
    NotActiveError,
)
from spark_stream.net.connection import Connection
from spark_stream.net.sc_endpoints import ScEndpoints
from spark_stream.net.stream import Stream
from spark_stream.protocol import control as c

__all__ = ["GroupMembership"]

# The group consumer's logger (``group.py``'s): applications and tests filter on that name.
log = logging.getLogger("spark_stream.client.consumer.group")

_BACKOFF_CAP = 1.0  # reconnect backoff: from RETRY_S, doubling up to this (seconds)


class GroupMembership(GroupPartitions):
    """The membership of a group member (a base of ``AsyncGroupConsumer``, which sets
    these attributes in its ``__init__`` and runs the pumps)."""

    pattern: str | None
    generation: int
    _sc: ScEndpoints
    _tls: ssl.SSLContext | None
    _token: str | None
    _instance_id: str | None
    _auto_commit: bool
    _commit_interval: float
    _max_poll_s: float
    _on_assign: RebalanceCallback | None
    _on_revoke: RebalanceCallback | None
    _on_lost: RebalanceCallback | None
    _stream: Stream | None
    _epoch: int
    _heartbeat_s: float
    _session: SessionClock
    _member_tasks: list[asyncio.Task[None]]
    _pulling: bool
    _last_pull: float
    _closed: bool

    # -- joining and following the coordinator -----------------------------------------

    async def _open(self) -> Connection:
        """A connection to the SC in use; a failed connect moves on to the next SC."""
        host, port = self._sc.current
        try:
            return await Connection.open(
                host, port, timeout=TIMEOUT, tls=self._tls, token=self._token
            )
        except ConnectionClosedError:
            self._sc.advance()
            raise

    async def _begin_membership(self) -> None:
        self._conn = await self._open()
        await self._join(resume=False)
        self._connected.set()
        self._last_pull = time.monotonic()
        loop = asyncio.get_running_loop()
        self._member_tasks = [
            loop.create_task(self._follow()),
            loop.create_task(self._heartbeats()),
        ]

    async def _join(self, resume: bool) -> None:
        """``GROUP_JOIN`` (new: epoch 0; resume: the last epoch and the partitions held)
        and apply the first push."""
        assert self._conn is not None
        owned = tp_list(self._pumps) if resume else []
        request = c.GroupJoinRequest(
            self.group,
            self.member_id,
            self.topics,
            member_epoch=self._epoch if resume else 0,
            instance_id=self._instance_id,
            owned=owned,
            pattern=self.pattern,
        )
        sent = time.monotonic()
        self._stream = await self._conn.stream(request)
        push = await self._stream.__anext__()
        self._session.confirm(sent)
        await self._apply(c.GroupAssignment.from_meta(push.meta, b""))

    async def _follow(self) -> None:
        """Apply every assignment push; reconnect when the SC connection is lost; a
        fenced or unknown member loses everything and joins again with epoch 0.

        Anything else ends ``stream_batches`` with its error.
        """
        try:
            while not self._closed:
                try:
                    await self._apply(await self._next_push())
                except FluvioError as exc:
                    if self._closed:
                        return
                    if not exc.retriable:
                        await self._forget(exc)
                    await self._reconnect(exc)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not self._closed:
                await self._queue.put(Item(None, error=exc))

    async def _next_push(self) -> c.GroupAssignment:
        assert self._stream is not None
        try:
            push = await self._stream.__anext__()
        except StopAsyncIteration:
            raise ConnectionClosedError(
                f"group {self.group}: the SC ended the membership"
            ) from None
        return c.GroupAssignment.from_meta(push.meta, b"")

    async def _reconnect(self, cause: FluvioError) -> None:
        """Open a new SC connection and join on it: resume with the last epoch and the
        partitions held, or (after ``_forget``) as a new member. Capped backoff, until
        closed; a new member's join refused for good (a deleted topic) is raised.
        """
        self._connected.clear()
        log.info("group %s: member %s reconnects (%s)", self.group, self.member_id, cause)
        delay = RETRY_S
        while not self._closed:
            try:
                if self._conn is not None:
                    await self._conn.close()
                self._conn = await self._open()
                await self._join(resume=self._epoch > 0)
            except FluvioError as exc:
                if isinstance(exc, NotActiveError) and not self._sc.follow(exc):
                    self._sc.advance()  # a standby that knows no active SC yet
                if not exc.retriable:
                    if self._epoch == 0:
                        raise
                    await self._forget(exc)  # the resume was refused: join anew
                    continue
            except OSError:
                pass
            else:
                self._connected.set()
                return
            await asyncio.sleep(delay)
            delay = min(2 * delay, _BACKOFF_CAP)

    async def _forget(self, cause: FluvioError) -> None:
        """The SC does not know this member's grants any more (fenced, unknown member):
        lose them; the next join is a new member's (epoch 0)."""
        log.info("group %s: member %s starts over (%r)", self.group, self.member_id, cause)
        await self._lose(list(self._pumps))
        self.generation = -1
        self._epoch = 0

    async def _heartbeats(self) -> None:
        while not self._closed:
            await asyncio.sleep(heartbeat_pause(self._heartbeat_s, random.random()))
            conn = self._conn
            if conn is None or not self._connected.is_set():
                continue
            owned = tp_list(self._pumps)
            request = c.GroupHeartbeatRequest(self.group, self.member_id, self._epoch, owned)
            sent = time.monotonic()
            with contextlib.suppress(FluvioError):  # the push stream reports fencing
                await conn.call(request, timeout=TIMEOUT)
                self._session.confirm(sent)

    async def _confirm_session(self) -> None:
        """Hold hand-outs while the session may have expired at the SC (this process was
        stopped or starved past it, see ``_group_session``): a heartbeat the SC answers
        confirms it; a refused one means the push stream is ending with the fence and
        ``_follow`` drops everything and joins again; while the SC is away, the resume
        that reconnects confirms it (or drops everything).
        """
        while self._session.may_have_expired(time.monotonic()) and not self._closed:
            conn = self._conn
            if conn is None or not self._connected.is_set():
                await asyncio.sleep(0.05)  # reconnecting
                continue
            owned = tp_list(self._pumps)
            request = c.GroupHeartbeatRequest(self.group, self.member_id, self._epoch, owned)
            sent = time.monotonic()
            try:
                await conn.call(request, timeout=TIMEOUT)
                self._session.confirm(sent)
            except FluvioError:
                await asyncio.sleep(0.05)  # let ``_follow`` take the fence and rejoin

    async def _auto_commits(self) -> None:
        while not self._closed:
            await asyncio.sleep(self._commit_interval)
            if self._left or not self._connected.is_set():
                continue  # retried at the next tick
            try:
                async with self._lock:
                    await self._commit_locked(self._commit_plan())
            except FluvioError as exc:
                log.warning("group %s: auto-commit failed: %s", self.group, exc)

    async def _apply(self, push: c.GroupAssignment) -> None:
        """Apply one assignment push (see the module doc for the order of steps)."""
        if push.generation < self.generation:
            return  # an older plan than one applied
        assigned, revoke = push_grants(push)
        async with self._lock:
            self.generation = push.generation
            self._epoch = push.member_epoch
            self._heartbeat_s = max(0.05, push.heartbeat_ms / 1000.0)
            # lost ones restart from the committed offset if granted again
            lost = lost_partitions(self._pumps, assigned, revoke)
            held = held_revoked(self._pumps, revoke)
            for tp in held:
                await self._halt(self._pumps[tp], revoking=True)
        await self._lose(lost)
        if held and self._on_revoke is not None:
            await self._callback(self._on_revoke, held)
        started: list[TopicPartition] = []
        async with self._lock:
            if revoke:
                try:
                    plan = self._commit_plan()
                    await self._commit_locked({tp: plan[tp] for tp in held if tp in plan})
                except FluvioError as exc:
                    if exc.retriable:
                        raise  # the SC is away: the resumed member gets the revoke again
                    log.warning("group %s: commit on revoke failed: %s", self.group, exc)
                for tp in held:
                    await self._stop(tp)
                assert self._conn is not None
                release = c.GroupReleaseRequest(
                    self.group, self.member_id, self._epoch, tp_list(revoke)
                )
                with contextlib.suppress(FencedMemberError):
                    await self._conn.call(release, timeout=TIMEOUT)
            for tp, epoch in assigned.items():
                pump = self._pumps.get(tp)
                action = grant_action(pump, epoch)
                if action is GrantAction.RESUME:
                    assert pump is not None
                    self._launch(self._restarted(pump, paused=False))
                elif action is GrantAction.START:
                    if pump is not None:
                        await self._stop(tp)
                    self._positions.pop(tp, None)  # known once this grant's start resolves
                    self._committed.pop(tp, None)
                    self._launch(Pump(tp, epoch))
                    started.append(tp)
        if started and self._on_assign is not None:
            await self._callback(self._on_assign, sorted(started))

    async def _lose(self, tps: list[TopicPartition]) -> None:
        """Partitions no longer this member's (no commit): stop them, tell ``on_lost``
        (a pump fenced at the gate told it already)."""
        told = [tp for tp in tps if tp in self._pumps and not self._pumps[tp].done]
        await self._stop_all(tps)
        if told and self._on_lost is not None:
            await self._callback(self._on_lost, sorted(told))

    async def _callback(self, callback: RebalanceCallback, tps: list[TopicPartition]) -> None:
        """Run an application callback; its error is raised by the next pull."""
        try:
            await call_back(callback, tps)
        except Exception as exc:
            log.warning("group %s: rebalance callback failed: %s", self.group, exc)
            await self._queue.put(Item(None, error=exc))

    # -- max_poll_interval ---------------------------------------------------------------

    async def _poll_watchdog(self) -> None:
        """Leave the group when the application has not pulled for ``max_poll_interval``."""
        tick = min(1.0, self._max_poll_s / 4)
        while not self._closed:
            await asyncio.sleep(tick)
            idle = time.monotonic() - self._last_pull
            if not self._left and not self._pulling and idle > self._max_poll_s:
                log.warning(
                    "group %s: no pull for %.1f s (max_poll_interval_ms): member %s leaves",
                    self.group,
                    idle,
                    self.member_id,
                )
                await self._leave()
                self._left = True

    async def _rejoin_after_leave(self) -> None:
        """The next pull after a ``max_poll_interval`` leave: join as a new member."""
        self.member_id = str(uuid.uuid4())
        self.generation, self._epoch = -1, 0
        try:
            await self._begin_membership()
        except BaseException:
            if self._conn is not None:
                await self._conn.close()
            raise
        self._left = False

    async def _leave(self) -> None:
        """End the membership as ``close`` does: ``on_revoke``, commit (auto-commit),
        stop the pumps, ``GROUP_LEAVE``, close the SC connection."""
        for task in self._member_tasks:
            task.cancel()
        await asyncio.gather(*self._member_tasks, return_exceptions=True)
        self._member_tasks = []
        try:
            async with self._lock:
                for pump in self._pumps.values():
                    await self._halt(pump, revoking=True)
            held = sorted(self._pumps)
            if held and self._on_revoke is not None:
                await self._callback(self._on_revoke, held)
            if self._auto_commit and self._connected.is_set():
                async with self._lock:
                    with contextlib.suppress(FluvioError):
                        await self._commit_locked(self._commit_plan())
            await self._drop_all()
            if self._conn is not None and not self._conn.closed:
                leave = c.GroupLeaveRequest(self.group, self.member_id, -1)
                with contextlib.suppress(FluvioError):
                    await self._conn.call(leave, timeout=TIMEOUT)
        finally:
            self._connected.clear()
            await self._drop_all()
            if self._conn is not None:
                await self._conn.close()
