"""The lease and fencing part of the KV contract, run on both stores (memory, Redis).

Claims, renewals and releases follow ``sc.lease``; a store fenced with a superseded
token refuses every kind of write with ``NotActiveError`` and changes nothing.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from sc.kv import KvStore
from sc.kv.groups import OffsetCommit
from spark_stream.errors import NotActiveError
from spark_stream.models import ConsumerGroup, ConsumerGroupSpec
from tests.sc.conftest import Backend
from tests.sc.kv.helpers import partition, topic

A = "127.0.0.1:9003,127.0.0.1:9004"
B = "127.0.0.1:9103,127.0.0.1:9104"
#: Long enough never to lapse during a test; short leases are waited out below.
TTL = 30.0
SHORT = 0.2


def test_claim_renew_release(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        assert (await store.lease_holder()).holder == ""
        first = await store.claim_lease(A, TTL)
        assert first.granted and first.token == 1 and first.holder == A
        refused = await store.claim_lease(B, TTL)
        assert not refused.granted and (refused.token, refused.holder) == (1, A)
        held = await store.lease_holder()
        assert (held.granted, held.token, held.holder) == (False, 1, A)
        assert (await store.renew_lease(1, A, TTL)).granted
        assert not (await store.renew_lease(1, B, TTL)).granted
        # The same holder claiming again (a restarted SC) takes a new token at once.
        again = await store.claim_lease(A, TTL)
        assert again.granted and again.token == 2
        assert not (await store.renew_lease(1, A, TTL)).granted
        await store.release_lease(1)  # not the holder's token: nothing happens
        assert (await store.lease_holder()).token == 2
        await store.release_lease(2)
        assert (await store.lease_holder()).holder == ""
        taken = await store.claim_lease(B, TTL)
        assert taken.granted and taken.token == 3

    backend.run(body)


def test_an_expired_lease_passes_to_another_and_the_old_holder_lost_it(
    backend: Backend,
) -> None:
    async def body(store: KvStore) -> None:
        assert (await store.claim_lease(A, SHORT)).token == 1
        await asyncio.sleep(SHORT * 2)
        # Expired, nobody claimed: the holder's renewal sets it again.
        assert (await store.renew_lease(1, A, SHORT)).granted
        await asyncio.sleep(SHORT * 2)
        taken = await store.claim_lease(B, TTL)
        assert taken.granted and taken.token == 2
        lost = await store.renew_lease(1, A, TTL)
        assert not lost.granted and (lost.token, lost.holder) == (2, B)

    backend.run(body)


def test_a_superseded_token_writes_nothing(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await store.create(topic("kept"))
        await store.create(partition("kept", 0))
        await store.create(ConsumerGroup.new("g", ConsumerGroupSpec()))
        old = await store.claim_lease(A, TTL)
        store.fence(old.token)
        assert store.fence_token == old.token
        made = await store.create(topic("by-a"))  # the token is the last issued: accepted
        await store.release_lease(old.token)
        new = await store.claim_lease(B, TTL)
        assert new.token == old.token + 1
        revision = await store.revision()
        writes = [
            store.create(topic("late")),
            store.update_spec("Topic", "kept", {"partitions": 1}, 1),
            store.update_status("Topic", "by-a", {}),
            store.delete("Topic", "by-a"),
            store.publish_group_plan("g", {}, {}, 3),
            store.commit_group_offsets("g", str(uuid.uuid4()), [OffsetCommit("kept", 0, 1, 1)]),
            store.write_group_offsets("g", {("kept", 0): 1}),
            store.delete_group_offsets("g"),
            store.delete_group("g"),
            store.add_tombstones(["u-late"]),
            store.store_id(),
        ]
        told: list[int] = []
        store.on_deposed = told.append
        for write in writes:
            with pytest.raises(NotActiveError, match="superseded"):
                await write
        assert told == [new.token] * len(writes)  # the store's last token
        assert await store.revision() == revision
        assert await store.get("Topic", "late") is None
        assert await store.get("Topic", "by-a") == made
        assert await store.fetch_group_offsets("g") == {}
        assert await store.tombstones() == frozenset()
        store.fence(new.token)  # the new holder writes
        assert (await store.create(topic("by-b"))).name == "by-b"
        store.fence(None)  # unfenced writes (tools, tests) are not checked
        assert (await store.create(topic("tool"))).name == "tool"

    backend.run(body)


def test_a_superseded_token_cannot_name_the_store_or_add_tombstones(backend: Backend) -> None:
    """The rebuild's two writes (``sc.rebuild``) are fenced like the others: a deposed SC
    neither names a store that lost its data nor records deleted partitions in it."""

    async def body(store: KvStore) -> None:
        old = await store.claim_lease(A, TTL)
        await store.release_lease(old.token)
        new = await store.claim_lease(B, TTL)
        store.fence(old.token)
        with pytest.raises(NotActiveError, match="superseded"):
            await store.store_id()
        with pytest.raises(NotActiveError, match="superseded"):
            await store.add_tombstones(["u-1", "u-2"])
        await store.add_tombstones([])  # nothing to write: nothing refused
        assert await store.tombstones() == frozenset()
        store.fence(new.token)  # the active SC names the store and records tombstones
        named = await store.store_id()
        assert named and await store.store_id() == named
        await store.add_tombstones(["u-3"])
        assert await store.tombstones() == {"u-3"}
        store.fence(old.token)  # named now, but a deposed SC still may not ask
        with pytest.raises(NotActiveError, match="superseded"):
            await store.store_id()
        assert await store.tombstones() == {"u-3"}

    backend.run(body)
