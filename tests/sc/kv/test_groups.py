"""The pure group records: encodings round-trip, validation names the field, errors map."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sc.kv.groups import (
    MAX_GRANT_EPOCH,
    MAX_OFFSET,
    CommitOutcome,
    CommitResult,
    Grant,
    StoredOffset,
    check_group_name,
    check_member_id,
    check_owners,
    field,
    grant_value,
    offset_value,
    parse_field,
    parse_grant,
    parse_offset,
)
from spark_stream.errors import (
    FencedMemberError,
    InvalidRequestError,
    OffsetOutOfRangeError,
    UnknownPartitionError,
)

topics = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(
    offset=st.integers(0, MAX_OFFSET),
    epoch=st.none() | st.integers(0, MAX_GRANT_EPOCH),
    ts_ms=st.integers(0, 2**48),
    metadata=st.text(max_size=50),
)
def test_offset_value_round_trips_any_metadata(
    offset: int, epoch: int | None, ts_ms: int, metadata: str
) -> None:
    stored = StoredOffset(offset, epoch, ts_ms, metadata)
    encoded = offset_value(stored)
    assert encoded.startswith(f"{offset}|")  # the commit script reads the offset there
    assert parse_offset(encoded) == stored


@settings(max_examples=200, deadline=None)
@given(topic=topics, index=st.integers(0, 99_999), epoch=st.integers(0, MAX_GRANT_EPOCH))
def test_field_and_grant_round_trip(topic: str, index: int, epoch: int) -> None:
    assert parse_field(field(topic, index)) == (topic, index)
    grant = Grant(str(uuid.uuid4()), epoch)
    assert parse_grant(grant_value(grant)) == grant


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (None, "member_id: must be a string"),
        ("", "not a canonical"),
        ("{0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01}", "not a canonical"),
        ("0b6c1a3e6f0d4f3c9a516f8a1f1b0a01", "not a canonical"),
        ("0B6C1A3E-6F0D-4F3C-9A51-6F8A1F1B0A01", "not a canonical"),
        ("00000000-0000-0000-0000-000000000000", "nil UUID"),
        ("x" * 10_000, "not a canonical"),
    ],
)
def test_member_ids_must_be_canonical_and_not_nil(value: object, match: str) -> None:
    with pytest.raises(InvalidRequestError, match=match) as info:
        check_member_id(value)
    assert len(str(info.value)) < 200  # a huge id is not echoed whole
    assert check_member_id("0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01")


def test_group_names_follow_the_topic_rule_up_to_249() -> None:
    assert check_group_name("a" * 249) == "a" * 249
    for bad in ("a" * 250, "Billing", "-x", "a:b", "", 7):
        with pytest.raises(InvalidRequestError, match="^group: "):
            check_group_name(bad)


def test_owner_map_validation_returns_grants() -> None:
    member = str(uuid.uuid4())
    assert check_owners({("orders", 0): (member, 3)}) == {("orders", 0): Grant(member, 3)}
    with pytest.raises(InvalidRequestError, match="owners: must be a mapping"):
        check_owners([(("orders", 0), Grant(member, 3))])  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match=r"owners\[orders/0\].grant_epoch"):
        check_owners({("orders", 0): Grant(member, True)})


def test_refused_commits_map_to_typed_errors() -> None:
    def result(outcome: CommitOutcome, committed: int | None) -> CommitResult:
        return CommitResult("orders", 2, outcome, committed)

    assert result(CommitOutcome.ACCEPTED, 5).error() is None
    fenced = result(CommitOutcome.FENCED, None).error()
    assert isinstance(fenced, FencedMemberError) and "orders/2" in str(fenced)
    back = result(CommitOutcome.BACKWARDS, 9).error()
    assert isinstance(back, OffsetOutOfRangeError) and "9" in str(back)
    assert isinstance(result(CommitOutcome.UNKNOWN_PARTITION, None).error(), UnknownPartitionError)
