"""The consumer-group part of the KV contract, run against every backend (memory, Redis).

Plan publish (status + owner map, one CAS step), fenced commits, unfenced writes,
offset reads and deletes, and group data purged with its partitions and its group.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sc.kv import ChangeType, CommitOutcome, Grant, KvStore, OffsetCommit
from sc.kv.groups import MAX_OFFSET
from spark_stream.errors import (
    ConflictError,
    GroupNotEmptyError,
    InvalidConfigError,
    InvalidRequestError,
    NotFoundError,
    UnknownGroupError,
    UnknownPartitionError,
)
from tests.sc.conftest import Backend
from tests.sc.kv.helpers import (
    GROUP,
    MEMBER_A,
    MEMBER_B,
    group,
    plan,
    take,
    topic_with_partitions,
)

O0, O1 = ("orders", 0), ("orders", 1)


async def _setup(store: KvStore, owners: dict[Any, Grant] | None = None) -> int:
    """Topic ``orders`` (2 partitions) and group ``billing`` with ``owners`` published.

    Returns the group object's revision.
    """
    await topic_with_partitions(store, "orders", 2)
    created = await store.create(group("billing"))
    if owners is None:
        return created.revision
    published = await store.publish_group_plan(
        "billing", plan(1), owners, created.revision, kind=GROUP
    )
    return published.revision


def _commit(tp: tuple[str, int], offset: int, epoch: int, metadata: str = "") -> OffsetCommit:
    return OffsetCommit(tp[0], tp[1], offset, epoch, metadata)


def test_publish_writes_status_and_owner_map_in_one_cas_step(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        created_rev = await _setup(store)
        owners = {O0: Grant(MEMBER_A, 1), O1: Grant(MEMBER_B, 1)}
        stored = await store.publish_group_plan("billing", plan(1), owners, created_rev, kind=GROUP)
        assert stored.revision == created_rev + 1 == await store.revision()
        assert stored.status == plan(1) and stored.spec == group("billing").spec
        assert await store.fetch_group_owners("billing") == owners
        [event] = await take(store.watch(GROUP, created_rev), 1)
        assert (event.type, event.object.status) == (ChangeType.MODIFIED, plan(1))
        # A plan computed from an older revision loses and writes nothing.
        with pytest.raises(ConflictError, match=f"revision {stored.revision}, not {created_rev}"):
            await store.publish_group_plan("billing", plan(2), {}, created_rev, kind=GROUP)
        assert await store.fetch_group_owners("billing") == owners
        assert (await store.get(GROUP, "billing")).status == plan(1)  # type: ignore[union-attr]
        # The owner map is replaced whole: a partition left out has no grant.
        again = await store.publish_group_plan(
            "billing", plan(2), {O1: Grant(MEMBER_A, 2)}, stored.revision, kind=GROUP
        )
        assert await store.fetch_group_owners("billing") == {O1: Grant(MEMBER_A, 2)}
        assert again.revision == stored.revision + 1
        with pytest.raises(NotFoundError, match="nope"):
            await store.publish_group_plan("nope", plan(1), {}, 1, kind=GROUP)
        assert await store.fetch_group_owners("nope") == {}

    backend.run(body)


@pytest.mark.parametrize(
    ("owners", "match"),
    [
        ({O0: Grant("00000000-0000-0000-0000-000000000000", 1)}, r"owners\[orders/0\].member_id"),
        ({O0: Grant(MEMBER_A.upper(), 1)}, "canonical lowercase UUID"),
        ({O0: Grant("member-1", 1)}, "member_id"),
        ({O0: Grant(MEMBER_A, -1)}, r"owners\[orders/0\].grant_epoch"),
        ({O0: Grant(MEMBER_A, 2**31)}, "grant_epoch: must be in"),
        ({O0: (MEMBER_A,)}, "must be a Grant"),
        ({("Orders", 0): Grant(MEMBER_A, 1)}, "owners key.topic"),
        ({("orders", -1): Grant(MEMBER_A, 1)}, "owners key.partition"),
        ({"orders/0": Grant(MEMBER_A, 1)}, "owners key: must be a"),
    ],
)
def test_publish_rejects_bad_owners_and_writes_nothing(
    backend: Backend, owners: dict[Any, Any], match: str
) -> None:
    async def body(store: KvStore) -> None:
        good = {O0: Grant(MEMBER_A, 1)}
        rev = await _setup(store, good)
        with pytest.raises(InvalidRequestError, match=match):
            await store.publish_group_plan("billing", plan(2), owners, rev, kind=GROUP)
        with pytest.raises(InvalidConfigError, match="resolution"):
            await store.publish_group_plan("billing", {"resolution": "x"}, {}, rev, kind=GROUP)
        assert await store.revision() == rev
        assert await store.fetch_group_owners("billing") == good

    backend.run(body)


def test_commit_is_fenced_per_partition(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        rev = await _setup(store, {O0: Grant(MEMBER_A, 1), O1: Grant(MEMBER_B, 2)})
        results = await store.commit_group_offsets(
            "billing",
            MEMBER_A,
            [_commit(O0, 10, 1, "batch 7|x"), _commit(O1, 20, 2), _commit(("orders", 5), 1, 1)],
        )
        assert [(r.topic, r.partition, r.outcome, r.committed) for r in results] == [
            ("orders", 0, CommitOutcome.ACCEPTED, 10),
            ("orders", 1, CommitOutcome.FENCED, None),
            ("orders", 5, CommitOutcome.UNKNOWN_PARTITION, None),
        ]
        assert results[0].accepted and results[0].error() is None
        assert type(results[1].error()).__name__ == "FencedMemberError"
        assert isinstance(results[2].error(), UnknownPartitionError)
        # The right member with a stale grant epoch is fenced too.
        [stale] = await store.commit_group_offsets("billing", MEMBER_B, [_commit(O1, 20, 1)])
        assert (stale.outcome, stale.committed) == (CommitOutcome.FENCED, None)
        [ok] = await store.commit_group_offsets("billing", MEMBER_B, [_commit(O1, 20, 2)])
        assert ok.accepted
        stored = await store.fetch_group_offsets("billing")
        assert set(stored) == {O0, O1}
        assert (stored[O0].offset, stored[O0].grant_epoch, stored[O0].metadata) == (
            10,
            1,
            "batch 7|x",
        )
        assert stored[O0].ts_ms > 1_600_000_000_000 and stored[O1].offset == 20
        assert await store.revision() == rev  # offsets are not in the feed

    backend.run(body)


def test_commit_never_moves_backwards_and_fences_after_a_move(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        rev = await _setup(store, {O0: Grant(MEMBER_A, 1)})
        [first] = await store.commit_group_offsets("billing", MEMBER_A, [_commit(O0, 10, 1)])
        [back] = await store.commit_group_offsets("billing", MEMBER_A, [_commit(O0, 9, 1)])
        assert (back.outcome, back.committed) == (CommitOutcome.BACKWARDS, 10)
        assert "committed offset 10" in str(back.error())
        [same] = await store.commit_group_offsets("billing", MEMBER_A, [_commit(O0, 10, 1)])
        assert same.accepted
        # The partition moves to B at generation 3: A's commits are refused from then on.
        await store.publish_group_plan(
            "billing", plan(3), {O0: Grant(MEMBER_B, 3)}, rev, kind=GROUP
        )
        [zombie] = await store.commit_group_offsets("billing", MEMBER_A, [_commit(O0, 15, 1)])
        assert (zombie.outcome, zombie.committed) == (CommitOutcome.FENCED, 10)
        [b_back] = await store.commit_group_offsets("billing", MEMBER_B, [_commit(O0, 4, 3)])
        assert b_back.outcome is CommitOutcome.BACKWARDS
        [b_ok] = await store.commit_group_offsets("billing", MEMBER_B, [_commit(O0, 12, 3)])
        assert b_ok.accepted and first.accepted
        got = await store.fetch_group_offsets("billing", [O0])
        assert (got[O0].offset, got[O0].grant_epoch) == (12, 3)

    backend.run(body)


def test_offsets_compare_exactly_beyond_float_precision(backend: Backend) -> None:
    big = 2**62  # 2**62 and 2**62 + 1 are the same double

    async def body(store: KvStore) -> None:
        await _setup(store, {O0: Grant(MEMBER_A, 1), O1: Grant(MEMBER_A, 1)})
        commits = [_commit(O0, big + 1, 1), _commit(O1, 99, 1)]
        assert all(
            r.accepted for r in await store.commit_group_offsets("billing", MEMBER_A, commits)
        )
        lower = [_commit(O0, big, 1), _commit(O1, 100, 1)]
        results = await store.commit_group_offsets("billing", MEMBER_A, lower)
        assert [r.outcome for r in results] == [CommitOutcome.BACKWARDS, CommitOutcome.ACCEPTED]
        [top] = await store.commit_group_offsets("billing", MEMBER_A, [_commit(O0, MAX_OFFSET, 1)])
        assert top.committed == MAX_OFFSET
        got = await store.fetch_group_offsets("billing")
        assert (got[O0].offset, got[O1].offset) == (MAX_OFFSET, 100)

    backend.run(body)


@pytest.mark.parametrize(
    ("group_name", "member", "commits", "match"),
    [
        ("Billing", MEMBER_A, [], "group: 'Billing' must be lowercase"),
        ("b" * 250, MEMBER_A, [], "group: .* longer than 249"),
        ("billing", "00000000-0000-0000-0000-000000000000", [], "member_id: must not be the nil"),
        ("billing", "", [], "member_id: '' is not a canonical"),
        ("billing", MEMBER_A + "0", [], "member_id"),
        ("billing", MEMBER_A, [_commit(O0, -1, 1)], r"commits\[1\].offset: must be in"),
        ("billing", MEMBER_A, [_commit(O0, 2**63, 1)], r"commits\[1\].offset"),
        ("billing", MEMBER_A, [_commit(O0, True, 1)], r"commits\[1\].offset: must be an integer"),
        ("billing", MEMBER_A, [_commit(O0, 1, -1)], r"commits\[1\].grant_epoch"),
        ("billing", MEMBER_A, [_commit(O0, 1, 1, "x" * 4097)], r"metadata: is 4097 bytes"),
        ("billing", MEMBER_A, [_commit(O0, 1, 1, "\udc80")], "metadata: is not encodable"),
        ("billing", MEMBER_A, [_commit(("x/y", 0), 1, 1)], r"commits\[1\].topic"),
        ("billing", MEMBER_A, [_commit(O1, 1, 1), _commit(O1, 2, 1)], "orders/1 appears twice"),
        ("billing", MEMBER_A, [{"topic": "orders"}], r"commits\[1\]: must be an OffsetCommit"),
    ],
)
def test_bad_commits_are_typed_errors_and_store_nothing(
    backend: Backend, group_name: str, member: str, commits: list[Any], match: str
) -> None:
    async def body(store: KvStore) -> None:
        rev = await _setup(store, {O0: Grant(MEMBER_A, 1), O1: Grant(MEMBER_A, 1)})
        # A valid partition first: a bad request must not store even that one.
        request = [_commit(O0, 5, 1), *commits] if commits else commits
        with pytest.raises(InvalidRequestError, match=match):
            await store.commit_group_offsets(group_name, member, request)
        assert await store.fetch_group_offsets("billing") == {}
        assert await store.revision() == rev

    backend.run(body)


def test_write_offsets_is_unfenced_but_refused_while_grants_exist(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        rev = await _setup(store, {O0: Grant(MEMBER_A, 1)})
        await store.commit_group_offsets("billing", MEMBER_A, [_commit(O0, 50, 1)])
        with pytest.raises(GroupNotEmptyError, match="billing"):
            await store.write_group_offsets("billing", {O0: 3}, kind=GROUP)
        # The last member leaves: an empty plan; now a reset may move offsets back.
        rev = (await store.publish_group_plan("billing", plan(2), {}, rev, kind=GROUP)).revision
        await store.write_group_offsets("billing", {O0: 3, O1: 7}, metadata="reset", kind=GROUP)
        got = await store.fetch_group_offsets("billing")
        assert {tp: (s.offset, s.grant_epoch, s.metadata) for tp, s in got.items()} == {
            O0: (3, None, "reset"),
            O1: (7, None, "reset"),
        }
        with pytest.raises(UnknownPartitionError, match="orders/2"):
            await store.write_group_offsets("billing", {O0: 1, ("orders", 2): 1}, kind=GROUP)
        with pytest.raises(UnknownGroupError, match="nobody"):
            await store.write_group_offsets("nobody", {O0: 1}, kind=GROUP)
        with pytest.raises(InvalidRequestError, match=r"offsets\[orders/0\]: must be in"):
            await store.write_group_offsets("billing", {O1: 0, O0: -4}, kind=GROUP)
        with pytest.raises(InvalidRequestError, match="metadata"):
            await store.write_group_offsets("billing", {O0: 1}, metadata="m" * 5000, kind=GROUP)
        got_after = await store.fetch_group_offsets("billing")
        assert {tp: s.offset for tp, s in got_after.items()} == {O0: 3, O1: 7}  # all or nothing
        assert await store.revision() == rev

    backend.run(body)


def test_fetch_offsets_of_some_partitions(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await _setup(store)
        await store.write_group_offsets("billing", {O1: 8}, kind=GROUP)
        assert await store.fetch_group_offsets("billing", [O0]) == {}
        got = await store.fetch_group_offsets("billing", [O0, O1, ("audit", 3)])
        assert list(got) == [O1] and got[O1].offset == 8
        assert await store.fetch_group_offsets("billing", []) == {}
        assert await store.fetch_group_offsets("other") == {}
        with pytest.raises(InvalidRequestError, match=r"partitions\[1\].partition"):
            await store.fetch_group_offsets("billing", [O0, ("orders", -2)])

    backend.run(body)


def test_delete_offsets_by_topic_or_all(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        rev = await _setup(store)
        await topic_with_partitions(store, "audit", 1)
        await store.write_group_offsets("billing", {O0: 1, O1: 2, ("audit", 0): 3}, kind=GROUP)
        rev = (
            await store.publish_group_plan(
                "billing", plan(1), {("audit", 0): Grant(MEMBER_A, 1)}, rev, kind=GROUP
            )
        ).revision
        with pytest.raises(GroupNotEmptyError):
            await store.delete_group_offsets("billing", "audit")
        with pytest.raises(GroupNotEmptyError):
            await store.delete_group_offsets("billing")
        assert await store.delete_group_offsets("billing", "orders") == 2
        assert list(await store.fetch_group_offsets("billing")) == [("audit", 0)]
        await store.publish_group_plan("billing", plan(2), {}, rev, kind=GROUP)
        assert await store.delete_group_offsets("billing") == 1
        assert await store.delete_group_offsets("billing") == 0
        assert await store.fetch_group_offsets("billing") == {}
        with pytest.raises(InvalidRequestError, match="topic"):
            await store.delete_group_offsets("billing", "Audit")

    backend.run(body)


def test_delete_group_takes_its_owner_map_and_offsets(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        rev = await _setup(store, {O0: Grant(MEMBER_A, 1)})
        await store.commit_group_offsets("billing", MEMBER_A, [_commit(O0, 5, 1)])
        with pytest.raises(GroupNotEmptyError, match="billing"):
            await store.delete_group("billing", kind=GROUP)
        assert await store.get(GROUP, "billing") is not None and await store.revision() == rev
        emptied = await store.publish_group_plan("billing", plan(2), {}, rev, kind=GROUP)
        with pytest.raises(ConflictError):
            await store.delete_group("billing", rev, kind=GROUP)
        gone = await store.delete_group("billing", emptied.revision, kind=GROUP)
        assert gone.status == plan(2)
        [event] = await take(store.watch(GROUP, emptied.revision), 1)
        assert (event.type, event.name) == (ChangeType.DELETED, "billing")
        assert await store.fetch_group_offsets("billing") == {}
        with pytest.raises(NotFoundError):
            await store.delete_group("billing", kind=GROUP)
        # A group created again under the name starts without offsets or grants.
        await store.create(group("billing"))
        assert await store.fetch_group_offsets("billing") == {}
        assert await store.fetch_group_owners("billing") == {}

    backend.run(body)


def test_deleting_a_partition_or_topic_purges_it_from_every_group(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await _setup(store)
        await topic_with_partitions(store, "audit", 1)
        second = await store.create(group("ledger"))
        await store.write_group_offsets("billing", {O0: 1, O1: 2, ("audit", 0): 3}, kind=GROUP)
        await store.publish_group_plan(
            "ledger",
            plan(1),
            {O1: Grant(MEMBER_B, 1), ("audit", 0): Grant(MEMBER_B, 1)},
            second.revision,
            kind=GROUP,
        )
        await store.commit_group_offsets(
            "ledger", MEMBER_B, [_commit(O1, 9, 1), _commit(("audit", 0), 4, 1)]
        )
        await store.delete("Partition", "orders-0")  # a partition on its own
        assert set(await store.fetch_group_offsets("billing")) == {O1, ("audit", 0)}
        await store.delete("Topic", "orders")
        assert list(await store.fetch_group_offsets("billing")) == [("audit", 0)]
        assert list(await store.fetch_group_offsets("ledger")) == [("audit", 0)]
        assert list(await store.fetch_group_owners("ledger")) == [("audit", 0)]
        # The topic comes back under the same name: no stale offset, the old grant is gone.
        await topic_with_partitions(store, "orders", 2)
        assert set(await store.fetch_group_offsets("billing")) == {("audit", 0)}
        [late] = await store.commit_group_offsets("ledger", MEMBER_B, [_commit(O1, 10, 1)])
        assert late.outcome is CommitOutcome.FENCED
        # A commit while the partition is gone is refused too.
        await store.delete("Topic", "audit")
        [gone] = await store.commit_group_offsets("ledger", MEMBER_B, [_commit(("audit", 0), 5, 1)])
        assert gone.outcome is CommitOutcome.UNKNOWN_PARTITION
        assert await store.fetch_group_offsets("ledger") == {}

    backend.run(body)


def test_concurrent_commits_keep_the_highest_offset(backend: Backend) -> None:
    committers, rounds = 4, 25

    async def body(store: KvStore) -> None:
        await _setup(store, {O0: Grant(MEMBER_A, 1)})
        stores = [store] if backend.name == "memory" else [backend.make(100) for _ in range(4)]

        async def commit(worker: int) -> list[tuple[int, CommitOutcome, int | None]]:
            out = []
            for i in range(rounds):
                offset = i * committers + worker
                client = stores[worker % len(stores)]
                [r] = await client.commit_group_offsets(
                    "billing", MEMBER_A, [_commit(O0, offset, 1)]
                )
                out.append((offset, r.outcome, r.committed))
                await asyncio.sleep(0)
            return out

        try:
            runs = await asyncio.gather(*(commit(w) for w in range(committers)))
        finally:
            for other in stores:
                if other is not store:
                    await other.close()
        top = committers * rounds - 1
        assert (await store.fetch_group_offsets("billing"))[O0].offset == top
        for offset, outcome, committed in (r for run in runs for r in run):
            assert committed is not None
            if outcome is CommitOutcome.ACCEPTED:
                assert committed == offset
            else:
                assert outcome is CommitOutcome.BACKWARDS and committed > offset

    backend.run(body)
