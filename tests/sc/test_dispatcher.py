"""The controller loop on the in-memory KV store: load, watch, reduce, retry, survive."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from sc.actions import Action, KvUpdateStatus
from sc.connection_manager import ConnectionManager
from sc.controllers.events import ControllerEvent, LrsUpdate, SpuConnected
from sc.dispatcher import Dispatcher
from sc.kv import MemoryKvStore
from sc.kv.store import KindFilter, Resync, WatchEvent
from sc.local_store import Change, LocalStore, StoreView
from sc.updaters import ActionDispatcher, KvUpdater
from spark_stream.errors import KvUnavailableError
from spark_stream.models import (
    PartitionResolution,
    Spu,
    SpuResolution,
    SpuSpec,
    SpuStatus,
    Topic,
    TopicResolution,
    TopicSpec,
)
from tests.polling import until
from tests.sc.sim_spu import run


def build(kv: MemoryKvStore, reducers: Any = None) -> tuple[Dispatcher, ConnectionManager]:
    store = LocalStore()
    cm = ConnectionManager("t", 5.0, lambda e: dispatcher.submit(e))
    actions = ActionDispatcher(KvUpdater(kv), cm)
    dispatcher = Dispatcher(kv, store, actions.execute, reducers)
    return dispatcher, cm


def test_load_and_watch_drive_a_topic_to_provisioned() -> None:
    async def body() -> None:
        kv = MemoryKvStore()
        await kv.create(Topic.new("orders", TopicSpec(partitions=4, replication_factor=2)))
        await kv.create(Spu.new("spu-1", SpuSpec(spu_id=1)))
        dispatcher, cm = build(kv)
        await dispatcher.load()
        dispatcher.start()
        try:
            await kv.create(Spu.new("spu-2", SpuSpec(spu_id=2)))

            def provisioned() -> bool:
                topic = dispatcher.store.topic("orders")
                return (
                    topic is not None
                    and topic.status.resolution is TopicResolution.PROVISIONED
                    and len(dispatcher.store.partitions_of("orders")) == 4
                    and all(
                        p.status.resolution is PartitionResolution.OFFLINE
                        for p in dispatcher.store.partitions()
                    )
                )

            await until(provisioned, what="topic provisioned")
            assert sorted(cm.spus) == [1, 2]
            assert len(cm.replicas) == 4
            assert await dispatcher.catch_up(2.0)
            assert dispatcher.errors == 0
        finally:
            await dispatcher.stop()

    run(body())


def test_a_failing_controller_is_logged_and_the_loop_goes_on() -> None:
    seen: list[Any] = []

    def boom(store: StoreView, event: ControllerEvent) -> list[Action]:
        raise RuntimeError("bug in a controller")

    def record(store: StoreView, event: ControllerEvent) -> list[Action]:
        seen.append(event)
        return []

    async def body() -> None:
        kv = MemoryKvStore()
        dispatcher, _ = build(kv, {"boom": boom, "record": record})
        await dispatcher.load()
        dispatcher.start()
        try:
            dispatcher.submit(SpuConnected(1))
            await kv.create(Spu.new("spu-1", SpuSpec(spu_id=1)))
            await until(lambda: len(seen) == 2, what="both events reduced")
            assert isinstance(seen[0], SpuConnected) and isinstance(seen[1], Change)
            assert dispatcher.errors == 2
        finally:
            await dispatcher.stop()

    run(body())


def test_a_cm_event_whose_write_lost_is_retried_after_the_next_kv_change() -> None:
    calls: list[int] = []

    def online(store: StoreView, event: ControllerEvent) -> list[Action]:
        if not isinstance(event, SpuConnected):
            return []
        spu = store.spu(event.spu_id)
        assert spu is not None
        calls.append(spu.revision)
        if spu.status.is_online:
            return []
        # The first decision is made on a stale view (as when the mirror lags the KV).
        revision = spu.revision - 1 if len(calls) == 1 else spu.revision
        online = SpuStatus(resolution=SpuResolution.ONLINE)
        return [KvUpdateStatus("Spu", spu.name, online, revision)]

    async def body() -> None:
        kv = MemoryKvStore()
        await kv.create(Spu.new("spu-1", SpuSpec(spu_id=1)))
        dispatcher, _ = build(kv, {"online": online})
        await dispatcher.load()
        dispatcher.start()
        try:
            dispatcher.submit(SpuConnected(1))
            await until(lambda: len(calls) == 1, what="first decision")
            assert dispatcher.processed_revision == 1
            await kv.create(Spu.new("spu-2", SpuSpec(spu_id=2)))  # any KV change

            async def is_online() -> bool:
                spu = await kv.get("Spu", "spu-1")
                return spu is not None and spu.status.is_online

            await until(is_online, what="SPU online after the retry")
            assert len(calls) >= 2
        finally:
            await dispatcher.stop()

    run(body())


def test_a_newer_event_replaces_a_pending_retry() -> None:
    from sc.dispatcher import _retry_key

    assert _retry_key(LrsUpdate("t-0", 1, (), 1, 1)) == _retry_key(LrsUpdate("t-0", 2, (), 5, 5))
    assert _retry_key(SpuConnected(3)) == ("spu", 3)


def test_wait_revision_is_bounded() -> None:
    async def body() -> None:
        dispatcher, _ = build(MemoryKvStore())
        await dispatcher.load()
        assert not await dispatcher.wait_revision(10, 0.05)
        assert await dispatcher.wait_revision(0, 0.05)

    run(body())


class FlakyKv(MemoryKvStore):
    """A store whose first watch fails as Redis would after its reconnect timeout."""

    def __init__(self) -> None:
        super().__init__()
        self.watches = 0

    def watch(self, kinds: KindFilter, from_revision: int) -> AsyncIterator[WatchEvent]:
        self.watches += 1
        if self.watches == 1:
            return self._fail()
        return super().watch(kinds, from_revision)

    async def _fail(self) -> AsyncIterator[WatchEvent]:
        raise KvUnavailableError("redis unreachable")
        yield  # pragma: no cover - makes this an async generator


def test_the_watch_resumes_after_the_kv_was_unavailable() -> None:
    async def body() -> None:
        kv = FlakyKv()
        dispatcher, cm = build(kv)
        await dispatcher.load()
        dispatcher.start()
        try:
            await kv.create(Spu.new("spu-1", SpuSpec(spu_id=1)))
            await until(lambda: 1 in cm.spus, what="SPU mirrored after the outage")
            assert kv.watches >= 2
        finally:
            await dispatcher.stop()

    run(body())


class ForgetfulKv(MemoryKvStore):
    """A store whose watch answers, once told to, a resync at revision 0 (data lost)."""

    def __init__(self) -> None:
        super().__init__()
        self.forget = asyncio.Event()

    def watch(self, kinds: KindFilter, from_revision: int) -> AsyncIterator[WatchEvent]:
        async def feed() -> AsyncIterator[WatchEvent]:
            await self.forget.wait()
            yield Resync(0, {})
            await asyncio.Event().wait()  # then nothing

        return feed()


def test_a_store_gone_back_halts_the_loop_without_acting_on_it() -> None:
    """Reducing an empty resync would delete every topic and stop every managed SPU."""

    async def body() -> None:
        kv = ForgetfulKv()
        await kv.create(Topic.new("orders", TopicSpec(partitions=1)))
        await kv.create(Spu.new("spu-1", SpuSpec(spu_id=1)))
        dispatcher, cm = build(kv)
        reasons: list[str] = []
        dispatcher.on_store_lost = reasons.append
        await dispatcher.load()
        dispatcher.start()
        try:
            await until(lambda: sorted(cm.spus) == [1], what="the SPU cached")
            revision = dispatcher.store.revision
            kv.forget.set()
            await until(lambda: dispatcher.halted, what="the loop halted")
            assert len(reasons) == 1 and f"went back from revision {revision} to 0" in reasons[0]
            assert dispatcher.store.topic("orders") is not None  # the mirror kept it
            assert sorted(cm.spus) == [1]  # not deleted from the connection manager
            dispatcher.submit(SpuConnected(1))  # nothing is reduced any more
            await asyncio.sleep(0.2)  # give the loop a chance to (wrongly) act on it
            spu = await kv.get("Spu", "spu-1")
            assert spu is not None and spu.status.resolution is SpuResolution.INIT
        finally:
            await dispatcher.stop()

    run(body())
