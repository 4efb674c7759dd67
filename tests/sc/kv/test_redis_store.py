"""Redis-only behaviour: restarts under a running watcher, reconnect with backoff."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as redis

from sc.kv import ChangeEvent, ChangeType, Grant, OffsetCommit, RedisKvStore, Resync
from spark_stream.errors import KvUnavailableError, NotActiveError
from spark_stream.local import RedisServer
from tests.sc.kv.helpers import GROUP, MEMBER_A, group, plan, take, topic, topic_with_partitions

pytestmark = pytest.mark.integration


def _store(url: str, reconnect_timeout: float = 20.0) -> RedisKvStore:
    return RedisKvStore(url, block_ms=100, reconnect_timeout=reconnect_timeout, backoff_max=0.2)


def test_watcher_resumes_after_a_restart_with_persistence(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as server:

        async def main() -> None:
            watcher, writer = _store(server.url), _store(server.url)
            try:
                watch = watcher.watch("Topic", 0)
                await writer.create(topic("before"))
                [first] = await take(watch, 1)
                assert first.revision == 1
                pending = asyncio.ensure_future(take(watch, 1))
                await asyncio.to_thread(server.restart)
                # The writer reconnects (and reloads its scripts) on its own.
                after = await writer.create(topic("after"))
                assert after.revision == 2
                [event] = await pending
                assert isinstance(event, ChangeEvent)
                assert (event.name, event.type, event.revision) == ("after", ChangeType.ADDED, 2)
                assert [t.name for t in (await watcher.list_objects("Topic"))[0]] == [
                    "after",
                    "before",
                ]
            finally:
                await watcher.close()
                await writer.close()

        asyncio.run(asyncio.wait_for(main(), 60))


def test_watcher_resyncs_when_redis_lost_its_data(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", appendonly=False) as server:

        async def main() -> None:
            watcher, writer = _store(server.url), _store(server.url)
            try:
                watch = watcher.watch(None, 0)
                await writer.create(topic("lost"))
                [first] = await take(watch, 1)
                assert first.revision == 1
                pending = asyncio.ensure_future(take(watch, 1))
                await asyncio.to_thread(server.restart)  # no AOF, no RDB: empty again
                [resync] = await pending
                assert isinstance(resync, Resync) and resync.revision == 0
                assert all(objs == () for objs in resync.objects.values())
                await writer.create(topic("fresh"))
                [event] = await take(watch, 1)
                assert (event.name, event.revision) == ("fresh", 1)
            finally:
                await watcher.close()
                await writer.close()

        asyncio.run(asyncio.wait_for(main(), 60))


def test_writes_wait_for_redis_to_come_back(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:

        async def main() -> None:
            store = _store(server.url)
            try:
                await store.create(topic("a"))
                await asyncio.to_thread(server.stop)
                write = asyncio.ensure_future(store.create(topic("b")))
                await asyncio.to_thread(server.start)  # same port, same data
                created = await write
                assert created.revision == 2
                assert [t.name for t in (await store.list_objects("Topic"))[0]] == ["a", "b"]
            finally:
                await store.close()

        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        server.stop()


def test_unreachable_redis_is_a_typed_error_in_bounded_time(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    url = server.url
    server.stop()

    async def main() -> None:
        store = _store(url, reconnect_timeout=0.3)
        try:
            with pytest.raises(KvUnavailableError, match="redis unreachable"):
                await store.get("Topic", "a")
            with pytest.raises(KvUnavailableError):
                await take(store.watch("Topic", 0), 1)
        finally:
            await store.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_concurrent_commits_share_round_trips_and_survive_a_script_flush(tmp_path: Path) -> None:
    """Commits of many members at once go out as pipelines on one connection (not one
    pooled connection each); every reply reaches its caller; a flushed script is
    reloaded."""
    members = 40
    with RedisServer(tmp_path / "redis") as server:

        async def main() -> None:
            store = _store(server.url)
            probe = redis.Redis.from_url(server.url)
            try:
                await topic_with_partitions(store, "orders", members)
                created = await store.create(group("billing"))
                owners = {("orders", p): Grant(MEMBER_A, 1) for p in range(members)}
                await store.publish_group_plan(
                    "billing", plan(1), owners, created.revision, kind=GROUP
                )
                before = (await probe.info("stats"))["total_connections_received"]
                results = await asyncio.gather(
                    *(
                        store.commit_group_offsets(
                            "billing", MEMBER_A, [OffsetCommit("orders", p, 10 + p, 1)]
                        )
                        for p in range(members)
                    )
                )
                opened = (await probe.info("stats"))["total_connections_received"] - before
                assert opened <= 2, f"{members} concurrent commits opened {opened} connections"
                assert [(r.partition, r.accepted) for [r] in results] == [
                    (p, True) for p in range(members)
                ]
                stored = await store.fetch_group_offsets("billing")
                assert {tp: o.offset for tp, o in stored.items()} == {
                    ("orders", p): 10 + p for p in range(members)
                }
                await probe.script_flush()
                [again] = await store.commit_group_offsets(
                    "billing", MEMBER_A, [OffsetCommit("orders", 0, 99, 1)]
                )
                assert again.accepted
                assert (await store.fetch_group_offsets("billing"))[("orders", 0)].offset == 99
            finally:
                await probe.aclose()
                await store.close()

        asyncio.run(asyncio.wait_for(main(), 60))


def test_a_deposed_sc_leaves_the_store_unnamed(redis_url: str) -> None:
    """The refused ``store_id`` of a superseded token sets no ``store-id`` key: the next
    active SC names the store with its own id."""

    async def main() -> None:
        deposed, active = _store(redis_url), _store(redis_url)
        probe = redis.Redis.from_url(redis_url, decode_responses=True)
        try:
            old = await active.claim_lease("a", 30.0)
            await active.release_lease(old.token)
            new = await active.claim_lease("b", 30.0)
            deposed.fence(old.token)
            with pytest.raises(NotActiveError):
                await deposed.store_id()
            with pytest.raises(NotActiveError):
                await deposed.add_tombstones(["u-1"])
            assert await probe.exists("fluvio:store-id", "fluvio:tombstones") == 0
            active.fence(new.token)
            named = await active.store_id()
            assert await probe.get("fluvio:store-id") == named
        finally:
            await probe.aclose()
            await deposed.close()
            await active.close()

    asyncio.run(asyncio.wait_for(main(), 30))
