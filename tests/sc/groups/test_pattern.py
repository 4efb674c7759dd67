"""Pattern subscriptions: the SC resolves a member's regex against its topics, and again
when topics are created or deleted (``ScApp`` on the in-memory KV, raw members)."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidRequestError
from spark_stream.models import GroupMember, check_pattern, matching_topics
from tests.sc.groups.member import RawMember
from tests.sc.groups.test_coordinator import TOPIC, describe, run, running_sc, stored

pytestmark = pytest.mark.integration


def test_pattern_matches_whole_names_and_a_bad_one_names_the_field() -> None:
    assert matching_topics("ord.*", ["orders", "orders-eu", "backorders"]) == {
        "orders",
        "orders-eu",
    }
    assert matching_topics(None, ["orders"]) == set()
    member = GroupMember(
        member_id="0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01", topics=("x",), pattern="o.*"
    )
    assert member.subscribed(["orders", "x", "y"]) == ("orders", "x")
    for bad in ("(", "", "a" * 1001, 7):
        with pytest.raises(InvalidRequestError, match=r"^pattern: "):
            check_pattern(bad)


def test_a_pattern_member_gets_topics_created_later_and_loses_deleted_ones() -> None:
    async def body() -> None:
        async with running_sc(partitions=2) as (app, admin):
            port = app.public_port
            member = RawMember(port, "billing", [], pattern="ord.*")
            await member.join()
            assert member.assigned() == {(TOPIC, 0), (TOPIC, 1)}

            await admin.create_topic("orders-eu", partitions=2, allow_missing_spus=True)
            await admin.create_topic("payments", partitions=1, allow_missing_spus=True)
            await member.until(lambda push: len(push.assigned) == 4)
            assert member.assigned() == {(TOPIC, 0), (TOPIC, 1), ("orders-eu", 0), ("orders-eu", 1)}
            desc = await describe(port, "billing")
            assert {r["topic"] for r in desc.partitions} == {TOPIC, "orders-eu"}
            assert stored(app, "billing").status.members[0].pattern == "ord.*"

            await admin.delete_topic("orders-eu")
            await member.until(lambda push: len(push.assigned) == 2)
            assert member.assigned() == {(TOPIC, 0), (TOPIC, 1)}

            # A second member with the pattern shares all of it; a named topic adds to it.
            other = RawMember(port, "billing", ["payments"], pattern="ord.*")
            await other.join()
            await member.until(lambda push: bool(push.revoke))
            await member.release()
            await other.until(
                lambda push: (
                    ("payments", 0) in {(g["topic"], g["partition"]) for g in push.assigned}
                    and len(push.assigned) == 2
                )
            )
            assert not any(g.revoking for g in stored(app, "billing").status.assignment)
            for m in (member, other):
                await m.close()

    run(body)


def test_bad_pattern_is_refused_naming_the_field() -> None:
    async def body() -> None:
        async with running_sc(partitions=2) as (app, _):
            revision = await app.kv.revision()
            member = RawMember(app.public_port, "billing", [], pattern="ord(")
            with pytest.raises(InvalidRequestError, match=r"^pattern: "):
                await member.join()
            # No topic and no pattern: refused, naming topics.
            with pytest.raises(InvalidRequestError, match=r"^topics: "):
                await RawMember(app.public_port, "billing", []).join()
            assert await app.kv.revision() == revision
            await member.close()

    run(body)
