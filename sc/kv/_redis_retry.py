"""Calls to Redis retried through connection failures for a bounded time.

The Redis KV store turns redis-py's own retries off and runs every call through
``retrying``: a connection failure (or a timeout) is retried with exponential backoff
until ``reconnect_timeout`` seconds have passed, then raises ``KvUnavailableError``; a
refused password raises ``UnauthorizedError`` at once (retrying cannot help). A caller
that waits under a budget (``sc.kv.budget``) also bounds each attempt, so a Redis that
accepts and never answers cannot hold it for the socket timeout. A write whose reply was
lost may have been applied: its retry then fails with ``ConflictError`` (or
``ObjectExistsError``), and the caller re-reads, as for any lost compare-and-set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.exceptions import AuthenticationError as RedisAuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from sc.kv.budget import budget_deadline, call_deadline
from spark_stream.backoff import BackoffPolicy
from spark_stream.errors import KvUnavailableError, UnauthorizedError

__all__ = ["FIRST_RETRY_S", "TRANSIENT", "retrying"]

T = TypeVar("T")

#: The failures worth a retry: the connection broke or did not answer in time.
TRANSIENT = (RedisConnectionError, RedisTimeoutError, ConnectionError)
#: First delay between retries; it doubles up to the store's ``backoff_max``.
FIRST_RETRY_S = 0.02


async def retrying(
    op: Callable[[], Awaitable[T]],
    *,
    backoff: BackoffPolicy,
    reconnect_timeout: float,
    closed: Callable[[], bool],
) -> T:
    """Run ``op``, retrying transient connection failures with ``backoff``.

    Args:
        op: one Redis call (made anew on each attempt).
        backoff: the delays between attempts.
        reconnect_timeout: seconds of failed attempts before giving up.
        closed: whether the store was closed (no more retries then).

    Raises:
        KvUnavailableError: Redis stayed unreachable (or silent past the budget).
        UnauthorizedError: Redis refused the credentials.
    """
    loop = asyncio.get_running_loop()
    budget = budget_deadline()
    deadline = call_deadline(loop.time(), reconnect_timeout, budget)
    delays = backoff.start()
    while True:
        try:
            if budget is None:
                return await op()
            # A waiting caller: also bound one attempt (a Redis that accepts and
            # never answers would otherwise hold it for the socket timeout).
            async with asyncio.timeout_at(deadline):
                return await op()
        except TimeoutError as exc:
            if budget is None or loop.time() < deadline:
                raise
            raise KvUnavailableError(f"redis did not answer in time: {exc!r}") from exc
        except RedisAuthenticationError as exc:  # not transient: retrying cannot help
            raise UnauthorizedError(
                f"redis refused the SC's credentials ({exc}); set its password with "
                "redis_password_file or in redis_url"
            ) from exc
        except TRANSIENT as exc:
            delay = delays.next()
            if closed() or loop.time() + delay > deadline:
                raise KvUnavailableError(f"redis unreachable: {exc}") from exc
            await asyncio.sleep(delay)  # backoff before reconnecting
