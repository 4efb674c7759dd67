"""The Redis KV store's change feed read as a stream of watch events.

Theory of operation. Every write appends its change to a Redis Stream with id
``{revision}-0`` in the same Lua script, so the feed never disagrees with the data.
``FeedReader.watch`` reads it with ``XREAD BLOCK`` from ``{last}-0``; because ids are
dense revisions, a first entry other than ``last + 1`` proves a trimmed gap and triggers
a re-list (``Resync``). After a reconnect or an idle block the reader also checks the
counter: a counter below its position means Redis lost data (restart without
persistence), which also triggers a re-list. Connection failures are retried with
backoff for ``reconnect_timeout`` seconds, then raise ``KvUnavailableError``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from redis.asyncio import Redis

from sc.kv._redis_codec import RedisKeys, entry_revision, feed_entries, feed_event
from sc.kv._redis_retry import TRANSIENT
from sc.kv.store import Resync, WatchEvent
from spark_stream.backoff import BackoffPolicy
from spark_stream.errors import KvUnavailableError
from spark_stream.models import KvObject

__all__ = ["FeedReader"]

T = TypeVar("T")


class _Call(Protocol):
    """The store's retrying call (``RedisKvStore._call``)."""

    def __call__(self, op: Callable[[], Awaitable[T]], name: str) -> Awaitable[T]: ...


Relist = Callable[[tuple[str, ...]], Awaitable[tuple[dict[str, list[KvObject[Any, Any]]], int]]]


@dataclass(frozen=True)
class FeedReader:
    """Reads the feed for ``RedisKvStore.watch``.

    Attributes:
        redis: the store's client.
        keys: the store's key names.
        batch: changes read per ``XREAD``.
        block_ms: how long one ``XREAD`` waits before the reader checks its position.
        reconnect_timeout: seconds of failed reads before ``KvUnavailableError``.
        backoff: the delays between failed reads.
        call: the store's retrying call (for the position check).
        relist: the store's ``list_kinds`` (for a ``Resync``).
        closed: whether the store was closed (the watch then ends).
    """

    redis: Redis
    keys: RedisKeys
    batch: int
    block_ms: int
    reconnect_timeout: float
    backoff: BackoffPolicy
    call: _Call
    relist: Relist
    closed: Callable[[], bool]

    async def watch(self, kinds: tuple[str, ...], last: int) -> AsyncGenerator[WatchEvent, None]:
        """The changes of ``kinds`` after revision ``last``, with a ``Resync`` where the
        feed cannot continue."""
        wanted = frozenset(kinds)
        verify = True  # check the position against the counter before reading
        loop = asyncio.get_running_loop()
        failing_since: float | None = None
        backoff = self.backoff.start()
        while not self.closed():
            if verify:
                lost = await self.call(
                    functools.partial(self._position_lost, last), "watch_position"
                )
                verify = False
                if lost:
                    resync = await self._resync(kinds)
                    last = resync.revision
                    yield resync
                    continue
            try:
                reply = await self.redis.xread(
                    {self.keys.feed: f"{last}-0"}, count=self.batch, block=self.block_ms
                )
            except TRANSIENT as exc:
                if self.closed():
                    return
                now = loop.time()
                failing_since = now if failing_since is None else failing_since
                if now - failing_since > self.reconnect_timeout:
                    raise KvUnavailableError(f"redis unreachable: {exc}") from exc
                await backoff.sleep()  # before reconnecting
                verify = True
                continue
            failing_since = None
            backoff.reset()
            entries = feed_entries(reply)
            if not entries:
                verify = True
                continue
            if entry_revision(entries[0][0]) != last + 1:
                resync = await self._resync(kinds)
                last = resync.revision
                yield resync
                continue
            for entry_id, fields in entries:
                last = entry_revision(entry_id)
                if fields["kind"] in wanted:
                    yield feed_event(last, fields)

    async def _position_lost(self, last: int) -> bool:
        """True when the feed cannot continue after ``last`` (data lost or trimmed)."""
        current = int(await self.redis.get(self.keys.rev) or 0)
        if current == last:
            return False
        if current < last:
            return True
        # Writes append to the feed atomically, so if none is readable it was lost.
        entries = feed_entries(await self.redis.xread({self.keys.feed: f"{last}-0"}, count=1))
        return not entries or entry_revision(entries[0][0]) != last + 1

    async def _resync(self, kinds: tuple[str, ...]) -> Resync:
        objects, revision = await self.relist(kinds)
        return Resync(revision, {kind: tuple(objs) for kind, objs in objects.items()})
