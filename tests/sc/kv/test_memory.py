"""MemoryKvStore specifics: configuration checks and shared read-only objects."""

from __future__ import annotations

import asyncio

import pytest

from sc.kv import MemoryKvStore
from tests.sc.kv.helpers import topic


def test_retention_must_be_positive() -> None:
    with pytest.raises(ValueError, match="feed_retention"):
        MemoryKvStore(feed_retention=0)


def test_reads_hand_out_the_stored_frozen_object() -> None:
    async def main() -> None:
        store = MemoryKvStore()
        created = await store.create(topic("a"))
        got = await store.get("Topic", "a")
        assert got is created  # no copy: the object is frozen
        assert got.model_config["frozen"] is True

    asyncio.run(main())


def test_retention_keeps_only_the_newest_changes() -> None:
    async def main() -> None:
        store = MemoryKvStore(feed_retention=3)
        for name in "abcde":
            await store.create(topic(name))
        assert await store.revision() == 5
        # From revision 2 the next change (3) is retained: no resync needed.
        events = []
        async for event in store.watch("Topic", 2):
            events.append(event)
            if len(events) == 3:
                break
        assert [e.revision for e in events] == [3, 4, 5]

    asyncio.run(asyncio.wait_for(main(), 10))
