"""``ScNode`` in process on a real Redis: take over, fence a stalled SC's write, step down.

Two nodes share one Redis key prefix. Node A's lease loop is stopped (its renewals stall,
as in a long pause) while A still runs its app; B takes the lease when it lapses. A write
A's app then makes (an admin request on A's own port) is refused by the fence and never
stored, and A steps down to a standby that names B.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest

from sc.kv import RedisKvStore
from sc.leadership import ScNode
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.errors import NotActiveError
from tests.polling import until

pytestmark = pytest.mark.integration


def settings(redis_url: str, prefix: str) -> ScSettings:
    return load_settings(
        ScSettings,
        redis_url=redis_url,
        key_prefix=prefix,
        public_port=0,
        private_port=0,
        lease_ttl_s=1.0,
        lease_poll_s=0.1,
    )


def test_a_stalled_active_sc_is_fenced_and_steps_down(redis_url: str) -> None:
    prefix = f"lead-{uuid.uuid4().hex[:8]}"

    async def body() -> None:
        a = ScNode(settings(redis_url, prefix))
        b = ScNode(settings(redis_url, prefix))
        kv = RedisKvStore(redis_url, prefix=prefix)
        try:
            await a.start()
            await b.start()
            assert (a.is_active, b.is_active, a.token) == (True, False, 1)
            async with AdminClient("127.0.0.1", b.public_port) as via_b:
                assert await via_b.list_topics() == []
                assert via_b.port == a.public_port  # followed B's NotActiveError to A
            # A stalls: its lease loop stops, its app keeps running.
            assert a._task is not None
            a._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await a._task
            await until(lambda: b.is_active, 10, "B to take over")
            assert b.token == 2
            revision = await kv.revision()
            async with AdminClient("127.0.0.1", a.public_port, timeout=5) as to_a:
                with pytest.raises(NotActiveError, match="superseded by 2"):
                    await to_a.create_topic("by-a", partitions=1, allow_missing_spus=True)
            assert await kv.get("Topic", "by-a") is None
            assert await kv.revision() == revision
            # A's loop resumes: the refused write already told it to step down.
            a._task = asyncio.get_running_loop().create_task(a._loop())
            await until(lambda: not a.is_active, 10, "A to step down")
            assert a.active_sc == b.me  # what A, a standby now, answers with
        finally:
            await a.stop()
            await b.stop()
            await kv.close()

    asyncio.run(asyncio.wait_for(body(), 60))
