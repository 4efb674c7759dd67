"""The one resumable metadata watch, against an in-process SC whose public side goes away.

``watch_metadata`` must resume from the last revision it delivered (an incremental
update, nothing repeated), wait with backoff for an SC that is not up yet, and feed
``MetadataWatcher`` across a drop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import logging
from collections.abc import AsyncIterator

import pytest

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.backoff import BackoffPolicy
from spark_stream.client.admin import AdminClient
from spark_stream.client.metadata import MetadataWatcher, watch_metadata
from spark_stream.config import load_settings
from spark_stream.errors import ConnectionClosedError
from spark_stream.local import free_port
from spark_stream.models import Topic, TopicSpec
from spark_stream.net.connection import Connection
from spark_stream.protocol.control import MetadataUpdate
from tests.polling import until
from tests.sc.sim_spu import run

pytestmark = pytest.mark.integration

HOST = "127.0.0.1"


@contextlib.asynccontextmanager
async def sc_app(port: int) -> AsyncIterator[ScApp]:
    app = ScApp(load_settings(ScSettings, public_port=port, private_port=0), kv=MemoryKvStore())
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


class Opener:
    """Opens a fresh connection per call (as ``Fluvio`` does) and closes them all at the end."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.opened: list[Connection] = []

    async def __call__(self) -> Connection:
        conn = await Connection.open(HOST, self.port, timeout=2)
        self.opened.append(conn)
        return conn

    async def close(self) -> None:
        for conn in self.opened:
            await conn.close()


def names(update: MetadataUpdate) -> list[str]:
    return [t["metadata"]["name"] for t in update.topics]


def test_resumes_from_the_last_revision_delivered_after_a_drop() -> None:
    async def body() -> None:
        port = free_port()
        async with sc_app(port) as app, AdminClient(HOST, port, timeout=5) as writer:
            opener, errors = Opener(port), list[BaseException]()
            updates = watch_metadata(opener, on_error=errors.append)
            got: list[MetadataUpdate] = []

            async def collect() -> None:  # keeps the watch running through the outage
                async for update in updates:
                    got.append(update)

            collector = asyncio.ensure_future(collect())
            try:
                await until(lambda: got, 5, "the snapshot")
                assert got[0].full and names(got[0]) == []
                await writer.create_topic("first", allow_missing_spus=True)
                await until(lambda: any("first" in names(u) for u in got), 5, "first")
                assert not any(u.full for u in got[1:])
                await app.public.stop()  # the SC's public side goes away...
                await until(lambda: len(errors) >= 2, 10, "the drop and a refused reconnect")
                before = len(got)
                await app.kv.create(Topic.new("during", TopicSpec()))  # ...while things change
                await app.public.server.start()
                # Resumed after the last delivered update: changes only, none repeated.
                await until(lambda: any("during" in names(u) for u in got[before:]), 10, "during")
                revisions = [u.revision for u in got]
                assert not any(u.full for u in got[before:])
                assert revisions == sorted(set(revisions))
                assert all(isinstance(e, ConnectionClosedError) for e in errors)
                assert len(opener.opened) == 2  # refused attempts open nothing
            finally:
                collector.cancel()
                await asyncio.gather(collector, return_exceptions=True)
                await updates.aclose()
                await opener.close()

    run(body())


def test_waits_with_backoff_for_an_sc_that_is_not_up_yet() -> None:
    async def body() -> None:
        port = free_port()
        opener, errors = Opener(port), list[BaseException]()
        backoff = BackoffPolicy(0.01, 0.05)
        updates = watch_metadata(opener, backoff=backoff, on_error=errors.append)
        pending = asyncio.ensure_future(anext(updates))
        try:
            await until(lambda: len(errors) >= 3, 10, "three refused attempts")
            assert not pending.done()  # retried, not given up
            async with sc_app(port):
                snapshot = await asyncio.wait_for(pending, 10)
                assert snapshot.full
        finally:
            pending.cancel()
            await updates.aclose()
            await opener.close()

    run(body())


def test_without_reconnect_a_dead_sc_is_raised_at_once() -> None:
    async def body() -> None:
        opener = Opener(free_port())
        updates = watch_metadata(opener, reconnect=False)
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(anext(updates), 5)

    run(body())


def test_watcher_keeps_its_view_across_a_drop(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sc.public_api")

    async def body() -> None:
        port = free_port()
        async with sc_app(port) as app, AdminClient(HOST, port, timeout=5) as writer:
            opener = Opener(port)
            watcher = MetadataWatcher(opener)
            try:
                await watcher.start(5)
                await writer.create_topic("before", allow_missing_spus=True)
                await watcher.wait_for(lambda v: "before" in v.topics, 5)
                seen = watcher.view.revision
                await app.public.stop()
                await app.kv.create(Topic.new("during", TopicSpec()))
                await app.public.server.start()
                await watcher.wait_for(lambda v: "during" in v.topics, 10)
                assert isinstance(watcher.last_error, ConnectionClosedError)
                assert set(watcher.view.topics) == {"before", "during"}
            finally:
                await watcher.close()
                await opener.close()
            opened = [
                r.args[1]
                for r in caplog.records
                if r.name == "sc.public_api"
                and r.msg.startswith("metadata watch opened")
                and isinstance(r.args, tuple)
            ]
            # A snapshot, then a resume from where the view was when the SC went away.
            assert len(opened) == 2 and opened[0] is None
            assert isinstance(opened[1], int) and seen is not None and opened[1] >= seen

    run(body())


def test_a_delivered_update_is_let_go_while_waiting_for_the_next() -> None:
    """Once the caller asks for the next update, the watch holds the last one no more:
    a big snapshot is freed while the stream is idle, not on the next push's time."""

    def held_by_the_watch(update: MetadataUpdate) -> list[str]:
        # A suspended async generator refers to its locals itself (not through a frame).
        return [
            ref.ag_code.co_qualname
            for ref in gc.get_referrers(update)
            if inspect.isasyncgen(ref) and ref.ag_code.co_name == "watch_metadata"
        ]

    async def body() -> None:
        port = free_port()
        async with sc_app(port), AdminClient(HOST, port, timeout=5) as admin:
            updates = admin.watch_metadata()
            snapshot = await asyncio.wait_for(anext(updates), 5)
            assert snapshot.full
            assert held_by_the_watch(snapshot)  # suspended at its yield: still its own
            waiting = asyncio.ensure_future(anext(updates))
            await asyncio.sleep(0)  # the watch runs until it waits for the next push
            assert not waiting.done()
            assert held_by_the_watch(snapshot) == []
            await admin.create_topic("t", partitions=1, allow_missing_spus=True)
            update = await asyncio.wait_for(waiting, 5)
            assert [t["metadata"]["name"] for t in update.topics] == ["t"]
            await updates.aclose()

    run(body())
