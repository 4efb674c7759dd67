"""What each public api needs from a token: a row per api (pure, no servers)."""

from __future__ import annotations

import uuid

import pytest

from spark_stream.auth import Claims, parse_grant
from spark_stream.auth.rules import ANY, CLUSTER_ADMIN, RULES, Need, check, need_of
from spark_stream.auth.tokens import Permission
from spark_stream.errors import PermissionDeniedError
from spark_stream.protocol import (
    ApiKey,
    FetchOffsetsRequest,
    FetchRequest,
    Message,
    ProduceRequest,
    StreamFetchRequest,
)
from spark_stream.protocol import control as c

P, C, A = Permission.PRODUCE, Permission.CONSUME, Permission.ADMIN
_PUBLIC = [k for k in ApiKey if 1000 <= k < 2000 or 3000 <= k < 4000 or 5000 <= k < 5020]


def test_every_public_api_has_a_rule() -> None:
    """A new api on a public port fails closed (cluster admin) until it gets a row here."""
    assert sorted(set(_PUBLIC) - set(RULES)) == []
    assert need_of(ApiKey.UPDATE_GATES, c.ListSpusRequest()) == CLUSTER_ADMIN


@pytest.mark.parametrize(
    ("api", "msg", "need"),
    [
        (ApiKey.PRODUCE, ProduceRequest("orders", 0, tail=b"frames"), Need((("orders", P),))),
        (ApiKey.FETCH, FetchRequest("orders", 1, 0), Need((("orders", C),))),
        (ApiKey.STREAM_FETCH, StreamFetchRequest("orders", 1, 0), Need((("orders", C),))),
        (ApiKey.FETCH_OFFSETS, FetchOffsetsRequest("orders", 0), Need((("orders", C),))),
        (
            ApiKey.CREATE_TOPIC,
            c.CreateTopicRequest("orders", {"partitions": 1}),
            Need((("orders", A),)),
        ),
        (ApiKey.DELETE_TOPIC, c.DeleteTopicRequest("orders"), Need((("orders", A),))),
        (ApiKey.LIST_TOPICS, c.ListTopicsRequest(), ANY),
        (ApiKey.WATCH_METADATA, c.WatchMetadataRequest(None), ANY),
        (ApiKey.LIST_SPUS, c.ListSpusRequest(), ANY),
        (ApiKey.UNREGISTER_SPU, c.UnregisterSpuRequest(5001), CLUSTER_ADMIN),
        (
            ApiKey.GROUP_JOIN,
            c.GroupJoinRequest("g", str(uuid.UUID(int=1)), ["b", "a"]),
            Need((("a", C), ("b", C))),
        ),
        (
            ApiKey.OFFSET_FETCH,
            c.OffsetFetchRequest("g", [{"topic": "a", "partition": 0}]),
            Need((("a", C),)),
        ),
        (ApiKey.OFFSET_FETCH, c.OffsetFetchRequest("g"), ANY),
        (ApiKey.DELETE_GROUP, c.DeleteGroupRequest("g"), CLUSTER_ADMIN),
        (ApiKey.RESET_OFFSETS, c.ResetOffsetsRequest("g", "earliest", "a"), Need((("a", A),))),
        (ApiKey.RESET_OFFSETS, c.ResetOffsetsRequest("g", "earliest"), CLUSTER_ADMIN),
    ],
)
def test_need_of(api: ApiKey, msg: Message, need: Need) -> None:
    assert need_of(api, msg) == need


def test_check_names_what_is_missing() -> None:
    producer = Claims("p", (parse_grant("orders=produce"),))
    check(producer, ApiKey.PRODUCE, ProduceRequest("orders", 0, tail=b"frames"))
    check(producer, ApiKey.LIST_TOPICS, c.ListTopicsRequest())
    with pytest.raises(PermissionDeniedError, match="consume permission on topic 'orders'"):
        check(producer, ApiKey.FETCH, FetchRequest("orders", 0, 0))
    with pytest.raises(PermissionDeniedError, match="admin permission on topic 'new'"):
        check(producer, ApiKey.CREATE_TOPIC, c.CreateTopicRequest("new", {"partitions": 1}))
    with pytest.raises(PermissionDeniedError, match="cluster admin"):
        check(producer, ApiKey.CREATE_SPU_GROUP, c.ListSpusRequest())
