"""The Redis store's pure translation (``sc.kv._redis_codec``): keys, arguments, replies.

No server: each row is a reply as a RESP2 client with ``decode_responses`` hands it over.
"""

from __future__ import annotations

from typing import Any

import pytest

from sc.kv import groups as g
from sc.kv._redis_codec import (
    RedisKeys,
    check_create,
    check_offsets_write,
    check_write,
    commit_fields,
    commit_results,
    decode_object,
    entry_revision,
    feed_entries,
    feed_event,
    lease_record,
    lease_refused,
    offset_fields,
    owner_fields,
    text,
    to_json,
)
from sc.kv.groups import CommitOutcome, CommitResult, Grant, OffsetCommit, StoredOffset
from sc.kv.store import ChangeType
from sc.lease import LeaseClaim
from spark_stream.errors import (
    ConflictError,
    GroupNotEmptyError,
    KvUnavailableError,
    NotFoundError,
    ObjectExistsError,
    UnknownGroupError,
    UnknownPartitionError,
)
from spark_stream.models import Topic, TopicSpec


def test_keys() -> None:
    keys = RedisKeys("p")
    assert (keys.rev, keys.feed, keys.lease, keys.tombstones) == (
        "p:rev",
        "p:feed",
        "p:lease",
        "p:tombstones",
    )
    assert keys.group("billing", "own") == "p:grp:billing:own"


def _stored(topic: Topic) -> tuple[str, str, str]:
    return (
        to_json(topic.metadata, exclude={"revision"}),
        to_json(topic.spec),
        to_json(topic.status),
    )


def test_an_object_round_trips_through_its_stored_parts() -> None:
    topic = Topic.new("orders", TopicSpec(partitions=3)).with_uid("u1")
    meta, spec, status = _stored(topic)
    assert " " not in spec and "revision" not in meta
    back = decode_object("Topic", "7", meta, spec, status)
    assert back == topic.with_revision(7)


@pytest.mark.parametrize(("value", "out"), [("a", "a"), (b"a", "a"), ("", "")])
def test_text(value: bytes | str, out: str) -> None:
    assert text(value) == out


@pytest.mark.parametrize(("entry_id", "revision"), [("1-0", 1), ("123456789-0", 123456789)])
def test_entry_revision(entry_id: str, revision: int) -> None:
    assert entry_revision(entry_id) == revision


def test_feed_entries_and_events() -> None:
    topic = Topic.new("orders", TopicSpec(partitions=2))
    meta, spec, status = _stored(topic)
    fields = {"kind": "Topic", "type": "ADDED", "orev": "4", "meta": meta, "spec": spec}
    fields["status"] = status
    reply: Any = [["p:feed", [("4-0", fields)]]]
    assert feed_entries(reply) == [("4-0", fields)]
    assert feed_entries([]) == []
    event = feed_event(4, fields)
    assert (event.kind, event.name, event.type, event.revision) == (
        "Topic",
        "orders",
        ChangeType.ADDED,
        4,
    )
    assert event.object == topic.with_revision(4)
    with pytest.raises(KvUnavailableError, match="RESP3"):
        feed_entries({"p:feed": [[("4-0", fields)]]})


@pytest.mark.parametrize(
    ("value", "claim"),
    [
        (None, LeaseClaim(False, 0, "")),
        ("", LeaseClaim(False, 0, "")),
        ("12|sc-a", LeaseClaim(False, 12, "sc-a")),
        ("3|host|with|bars", LeaseClaim(False, 3, "host|with|bars")),
    ],
)
def test_lease_record(value: str | None, claim: LeaseClaim) -> None:
    assert lease_record(value) == claim


def test_lease_refused() -> None:
    assert lease_refused(["held", "9", "sc-b"]) == LeaseClaim(False, 9, "sc-b")


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (["ok", "3"], None),
        (["missing"], NotFoundError),
        (["conflict", "8"], ConflictError),
        (["busy"], GroupNotEmptyError),
    ],
)
def test_check_write(reply: list[Any], error: type[Exception] | None) -> None:
    if error is None:
        check_write(reply, "Topic", "t", 2)
        return
    with pytest.raises(error) as info:
        check_write(reply, "Topic", "t", 2)
    if error is ConflictError:
        assert "revision 8, not 2" in str(info.value)


@pytest.mark.parametrize(
    ("reply", "error"),
    [(["ok", "1"], None), (["exists"], ObjectExistsError), (["noparent"], NotFoundError)],
)
def test_check_create(reply: list[Any], error: type[Exception] | None) -> None:
    if error is None:
        check_create(reply, "Partition", "t-0", None)
    else:
        with pytest.raises(error, match="t-0"):
            check_create(reply, "Partition", "t-0", "Topic/t")


@pytest.mark.parametrize(
    ("reply", "error", "words"),
    [
        (["ok"], None, ""),
        (["missing"], UnknownGroupError, "does not exist"),
        (["busy"], GroupNotEmptyError, "offsets not written"),
        (["unknown", "t", "9"], UnknownPartitionError, "t/9"),
    ],
)
def test_check_offsets_write(reply: list[Any], error: type[Exception] | None, words: str) -> None:
    if error is None:
        check_offsets_write(reply, "billing")
    else:
        with pytest.raises(error, match=words):
            check_offsets_write(reply, "billing")


def test_owner_fields_are_in_partition_order() -> None:
    owners = {("t", 1): Grant("m2", 4), ("a", 0): Grant("m1", 3), ("t", 0): Grant("m1", 2)}
    args = owner_fields(owners)
    assert args[0::2] == [g.field("a", 0), g.field("t", 0), g.field("t", 1)]
    assert [g.parse_grant(str(v)) for v in args[1::2]] == [
        Grant("m1", 3),
        Grant("m1", 2),
        Grant("m2", 4),
    ]


def test_commit_fields_and_results() -> None:
    commits = (OffsetCommit("t", 0, 10, 2, "x"), OffsetCommit("t", 1, 20, 3))
    args = commit_fields(commits, ts_ms=99)
    assert args[0::2] == [g.field("t", 0), g.field("t", 1)]
    assert g.parse_offset(str(args[1])) == StoredOffset(10, 2, 99, "x")
    assert g.parse_offset(str(args[3])) == StoredOffset(20, 3, 99, "")
    results = commit_results(commits, ["accepted", "", "fenced", "5"])
    assert results == [
        CommitResult("t", 0, CommitOutcome.ACCEPTED, None),
        CommitResult("t", 1, CommitOutcome.FENCED, 5),
    ]


def test_offset_fields_carry_no_grant_epoch() -> None:
    args = offset_fields({("t", 2): 7}, ts_ms=5, metadata="m")
    assert args[:2] == ["t", 2]
    assert g.parse_offset(str(args[2])) == StoredOffset(7, None, 5, "m")
