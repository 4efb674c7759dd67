"""``AdminClient`` against an in-process SC: typed results, and a watch that resumes."""

from __future__ import annotations

import asyncio

import pytest

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.errors import ConnectionClosedError, InvalidRequestError
from spark_stream.local import free_port
from spark_stream.models import Spu, Topic, TopicSpec
from tests.sc.sim_spu import run

pytestmark = pytest.mark.integration


def test_models_in_and_out() -> None:
    async def body() -> None:
        settings = load_settings(ScSettings, public_port=0, private_port=0)
        app = ScApp(settings, kv=MemoryKvStore())
        await app.start()
        try:
            async with AdminClient("127.0.0.1", app.public_port) as admin:
                topic = await admin.create_topic(
                    "t", TopicSpec(partitions=2), allow_missing_spus=True
                )
                assert isinstance(topic, Topic) and topic.spec.partitions == 2
                spu = await admin.register_spu(4, rack="east")
                assert isinstance(spu, Spu) and spu.spec.rack == "east"
                with pytest.raises(InvalidRequestError, match="spec"):
                    await admin.create_topic("u", spec=42)  # type: ignore[arg-type]
        finally:
            await app.stop()

    run(body())


def test_watch_reconnects_and_resumes_from_the_last_revision() -> None:
    async def body() -> None:
        port = free_port()
        settings = load_settings(ScSettings, public_port=port, private_port=0)
        app = ScApp(settings, kv=MemoryKvStore())
        await app.start()
        admin = AdminClient("127.0.0.1", port, timeout=5)
        writer = AdminClient("127.0.0.1", port, timeout=5)
        try:
            await writer.create_topic("before", allow_missing_spus=True)
            watch = admin.watch_metadata()
            first = await asyncio.wait_for(watch.__anext__(), 5)
            assert first.full and [t["metadata"]["name"] for t in first.topics] == ["before"]
            await app.public.stop()  # the SC's public side goes away...
            await writer.close()
            pending = asyncio.ensure_future(watch.__anext__())
            await app.kv.create(Topic.new("during", TopicSpec()))  # ...while things change
            await app.public.server.start()
            update = await asyncio.wait_for(pending, 10)
            assert not update.full  # resumed, not re-read
            assert "during" in [t["metadata"]["name"] for t in update.topics]
            await watch.aclose()
            no_retry = admin.watch_metadata(reconnect=False)
            await admin.close()
            await app.public.stop()
            with pytest.raises(ConnectionClosedError):
                await no_retry.__anext__()
        finally:
            await admin.close()
            await writer.close()
            await app.stop()

    run(body())
