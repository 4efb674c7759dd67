"""Consumer-group messages (``_groups``): round trips and field checks, in memory."""

from __future__ import annotations

import re
from typing import Any

import pytest

from spark_stream.errors import InvalidRequestError
from spark_stream.protocol import STREAM_APIS, ApiKey, Message
from spark_stream.protocol import control as c
from spark_stream.protocol.message import Role, message_type

MEMBER = "6f1c2a8e-1111-4222-8333-444455556666"
TP = [{"topic": "orders", "partition": 1}]

GOOD: list[Message] = [
    c.GroupJoinRequest("g", MEMBER, ["orders"], 3, "w-1", "cli", 5_000, 6_000, TP),
    c.GroupAssignment(4, 3, 1_000, 10_000, [{**TP[0], "grantEpoch": 2}], []),
    c.GroupHeartbeatRequest("g", MEMBER, 3, TP),
    c.GroupHeartbeatResponse(4, 3, [], []),
    c.GroupReleaseRequest("g", MEMBER, 3, TP),
    c.GroupLeaveRequest("g", MEMBER, -2),
    c.OffsetCommitRequest("g", MEMBER, [{**TP[0], "offset": 9, "grantEpoch": 2}]),
    c.OffsetFetchRequest("g", TP),
    c.ListGroupsRequest(),
    c.DescribeGroupRequest("g"),
    c.DeleteGroupRequest("g"),
    c.ResetOffsetsRequest("g", "shift-by", "orders", -5),
    c.DeleteOffsetsRequest("g", "orders"),
    c.ProgressCommitRequest("g", [{**TP[0], "offset": 12}]),
    c.ProgressCommitResponse(1, [TP[0]]),
]


@pytest.mark.parametrize("msg", GOOD, ids=lambda m: type(m).__name__)
def test_round_trip(msg: Message) -> None:
    assert type(msg).from_meta(msg.to_meta(), b"") == msg
    assert message_type(msg.API_KEY, msg.ROLE) is type(msg)


def test_keys_are_registered_and_join_is_a_stream() -> None:
    assert message_type(ApiKey.GROUP_JOIN, Role.PUSH) is c.GroupAssignment
    assert ApiKey.GROUP_JOIN in STREAM_APIS and ApiKey.GROUP_HEARTBEAT not in STREAM_APIS


BAD: list[tuple[type[Message], dict[str, Any], str]] = [
    (c.GroupJoinRequest, {"group": "g", "member_id": MEMBER.upper(), "topics": ["t"]}, "member_id"),
    (c.GroupJoinRequest, {"group": "g", "member_id": MEMBER, "topics": ["t", "t"]}, "topics"),
    (c.GroupJoinRequest, {"group": "g", "member_id": MEMBER, "topics": [""]}, "topics[0]"),
    (
        c.GroupJoinRequest,
        {"group": "g", "member_id": MEMBER, "topics": ["t"], "session_timeout_ms": 100},
        "session_timeout_ms",
    ),
    (
        c.GroupJoinRequest,
        {"group": "g", "member_id": MEMBER, "topics": ["t"], "owned": [*TP, *TP]},
        "owned",
    ),
    (
        c.GroupHeartbeatRequest,
        {"group": "g", "member_id": MEMBER, "member_epoch": True},
        "member_epoch",
    ),
    (
        c.GroupReleaseRequest,
        {"group": "g", "member_id": MEMBER, "member_epoch": 1, "partitions": [5]},
        "partitions[0]",
    ),
    (c.GroupLeaveRequest, {"group": "g", "member_id": MEMBER, "member_epoch": 1}, "member_epoch"),
    (
        c.OffsetCommitRequest,
        {"group": "g", "member_id": MEMBER, "commits": [{**TP[0], "offset": 1, "grantEpoch": -1}]},
        "commits[0].grantEpoch",
    ),
    (
        c.OffsetCommitRequest,
        {
            "group": "g",
            "member_id": MEMBER,
            "commits": [{**TP[0], "offset": 1, "grantEpoch": 1, "metadata": "x" * 5000}],
        },
        "commits[0].metadata",
    ),
    (c.OffsetFetchRequest, {"group": "g/h"}, "group"),
    (c.ResetOffsetsRequest, {"group": "g", "mode": "offset", "value": -1}, "value"),
    (c.ResetOffsetsRequest, {"group": "g", "mode": "latest", "execute": "yes"}, "execute"),
    (
        c.ProgressCommitRequest,
        {"group": "g", "offsets": [{**TP[0], "offset": -1}]},
        "offsets[0].offset",
    ),
    (c.ProgressCommitRequest, {"group": "g", "offsets": [TP[0], TP[0]]}, "offsets"),
]


@pytest.mark.parametrize(("cls", "meta", "field"), BAD, ids=lambda v: getattr(v, "__name__", ""))
def test_bad_fields_are_named(cls: type[Message], meta: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidRequestError, match=re.escape(field)):
        cls.from_meta(meta, b"")
