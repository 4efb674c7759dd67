"""SC test fixtures: ``backend`` runs a test on each KV implementation (memory, real Redis)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import pytest

from sc.kv import DEFAULT_FEED_RETENTION, KvStore, MemoryKvStore, RedisKvStore

T = TypeVar("T")

#: Upper bound on any one test body; a hang fails the test instead of the suite.
BODY_TIMEOUT = 30.0


@dataclass
class Backend:
    """Makes stores of one implementation inside the running event loop."""

    name: str
    make: Callable[[int], KvStore]

    def run(
        self,
        body: Callable[[KvStore], Awaitable[T]],
        *,
        retention: int = DEFAULT_FEED_RETENTION,
    ) -> T:
        """Run ``body(store)`` on a fresh loop with a fresh store, then close the store."""

        async def main() -> T:
            store = self.make(retention)
            try:
                return await asyncio.wait_for(body(store), BODY_TIMEOUT)
            finally:
                await store.close()

        return asyncio.run(main())


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each KV implementation in turn; Redis ones get a fresh key prefix."""
    if request.param == "memory":
        return Backend("memory", lambda retention: MemoryKvStore(feed_retention=retention))
    url = request.getfixturevalue("redis_url")
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    return Backend(
        "redis",
        lambda retention: RedisKvStore(
            url, prefix=prefix, feed_retention=retention, block_ms=100, reconnect_timeout=5.0
        ),
    )
