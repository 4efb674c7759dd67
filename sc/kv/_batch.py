"""Concurrent calls of one Lua script, sent together: one pipeline per round trip.

Theory of operation. ``call(args)`` queues the arguments and waits for its own reply. One
flusher task at a time takes everything queued, sends it as one non-transactional
pipeline of ``EVALSHA`` and hands each caller its reply (or its own error); what arrives
while a pipeline is in flight goes in the next one. So a lone call costs one round trip
as before, and many concurrent callers (offset commits from many members) share round
trips: redis-py's per-command cost (a pooled connection, a send, a read, a wakeup) is
paid once per pipeline instead of once per call. Each script still runs atomically on
its own and in call order; nothing is grouped into a transaction.

Calls that meet ``NOSCRIPT`` (the first ones, or after Redis restarted or flushed its
scripts) wait for one ``SCRIPT LOAD`` and are sent again, once. Connection failures fail the
whole pipeline, which ``retry`` (the store's bounded backoff) sends again.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError

__all__ = ["ScriptBatcher"]

Retry = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
_Call = tuple[list[Any], "asyncio.Future[Any]", bool]  # arguments, reply, sent after a load


class ScriptBatcher:
    """Sends concurrent calls of ``script`` (no keys, arguments only) in pipelines.

    Args:
        redis: the client whose pool runs the pipelines.
        script: the registered script.
        retry: runs an operation with the store's retries (``RedisKvStore._call``).
    """

    def __init__(self, redis: Redis, script: AsyncScript, retry: Retry) -> None:
        self._redis = redis
        self._script = script
        self._retry = retry
        self._queue: list[_Call] = []
        self._flusher: asyncio.Task[None] | None = None
        self._reloads: set[asyncio.Task[None]] = set()
        self._loading: asyncio.Future[Any] | None = None  # SCRIPT LOAD after NOSCRIPT

    async def call(self, args: list[Any]) -> Any:
        """The script's reply for ``args`` (its error raised here)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._enqueue(args, future, reloaded=False)
        return await future

    def _enqueue(self, args: list[Any], future: asyncio.Future[Any], *, reloaded: bool) -> None:
        self._queue.append((args, future, reloaded))
        if self._flusher is None or self._flusher.done():
            loop = asyncio.get_running_loop()
            self._flusher = loop.create_task(self._flush(), name="kv-script-batch")

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                replies = await self._retry(functools.partial(self._send, batch))
            except asyncio.CancelledError:  # the loop is going away: so are the callers
                for _, future, _ in [*batch, *self._queue]:
                    future.cancel()
                raise
            except Exception as exc:  # every caller of this pipeline gets the failure
                for _, future, _ in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            unknown: list[_Call] = []
            for (args, future, reloaded), reply in zip(batch, replies, strict=True):
                if future.done():
                    continue  # the caller was cancelled
                if isinstance(reply, NoScriptError) and not reloaded:
                    unknown.append((args, future, True))
                elif isinstance(reply, Exception):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
            if unknown:
                task = asyncio.get_running_loop().create_task(self._reload(unknown))
                self._reloads.add(task)
                task.add_done_callback(self._reloads.discard)

    async def _send(self, batch: list[_Call]) -> list[Any]:
        if len(batch) == 1:  # alone: a plain EVALSHA costs less than a pipeline of one
            try:
                return [await self._redis.evalsha(self._script.sha, 0, *batch[0][0])]
            except ResponseError as exc:
                return [exc]
        pipe = self._redis.pipeline(transaction=False)
        for args, _, _ in batch:
            pipe.evalsha(self._script.sha, 0, *args)
        return list(await pipe.execute(raise_on_error=False))

    async def _reload(self, calls: list[_Call]) -> None:
        """Load the script (one ``SCRIPT LOAD`` for every batch that met ``NOSCRIPT``),
        then send those calls again, once."""
        if self._loading is None or self._loading.done():
            load = self._retry(lambda: self._redis.script_load(self._script.script))
            self._loading = asyncio.ensure_future(load)
        try:
            await asyncio.shield(self._loading)
        except Exception as exc:
            for _, future, _ in calls:
                if not future.done():
                    future.set_exception(exc)
            return
        for args, future, reloaded in calls:
            if not future.done():
                self._enqueue(args, future, reloaded=reloaded)
