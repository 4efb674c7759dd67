"""``PROGRESS_COMMIT`` (a Spark query's ``progressGroup``) on an SC in process: the first
write creates a progress-only group, later ones move its offsets either way, and a group
of members is never written."""

from __future__ import annotations

import pytest

from spark_stream.errors import GroupNotEmptyError, InvalidRequestError
from spark_stream.models import GroupKind, GroupState
from tests.sc.conftest import Backend
from tests.sc.groups.member import RawMember
from tests.sc.groups.test_coordinator import TOPIC, run, running_sc, stored

pytestmark = pytest.mark.integration


def test_progress_creates_an_external_group_and_mirrors_offsets_either_way(
    backend: Backend,
) -> None:
    async def body() -> None:
        async with running_sc(spus=1, backend=backend) as (app, admin):
            claim = await admin.commit_progress("query-a", {})
            assert claim.written == 0
            group = stored(app, "query-a")
            assert group.spec.kind is GroupKind.EXTERNAL
            assert group.status.state is GroupState.EXTERNAL and not group.status.members
            await admin.commit_progress("query-a", {(TOPIC, 0): 40, (TOPIC, 1): 7})
            # An older checkpoint (a restarted query) moves it back: the checkpoint rules.
            reply = await admin.commit_progress("query-a", {(TOPIC, 0): 25, (TOPIC, 9): 3})
            assert reply.written == 1
            assert reply.skipped == [{"topic": TOPIC, "partition": 9}]  # no such partition
            assert await admin.fetch_offsets("query-a") == {(TOPIC, 0): 25, (TOPIC, 1): 7}
            [listed] = await admin.list_groups()
            assert listed["state"] == "External" and listed["members"] == 0
            desc = await admin.describe_group("query-a")
            rows = {(r["topic"], r["partition"]): r["offset"] for r in desc.partitions}
            assert rows[(TOPIC, 0)] == 25 and rows[(TOPIC, 2)] is None
            member = RawMember(app.public_port, "query-a", [TOPIC])
            with pytest.raises(InvalidRequestError, match="progress-only"):
                await member.join()  # members never join a progress group
            await member.close()

    run(body)


def test_progress_refuses_a_group_of_members() -> None:
    async def body() -> None:
        async with running_sc(spus=1) as (app, admin):
            a = RawMember(app.public_port, "billing", [TOPIC])
            await a.join()
            await a.commit({(TOPIC, 0): (7, a.grant_epoch((TOPIC, 0)))})
            with pytest.raises(GroupNotEmptyError, match="'billing' has 1 member"):
                await admin.commit_progress("billing", {(TOPIC, 0): 99})
            await a.leave()
            # Empty now, but still a group of members: its offsets are its members'.
            with pytest.raises(InvalidRequestError, match="'billing' is a group of members"):
                await admin.commit_progress("billing", {(TOPIC, 0): 99})
            assert await admin.fetch_offsets("billing") == {(TOPIC, 0): 7}
            assert stored(app, "billing").spec.kind is GroupKind.MEMBERS
            await a.close()

    run(body)
