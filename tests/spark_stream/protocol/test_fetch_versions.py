"""Fetch versions: 1 adds the consumer-group fields, 2 the leader epoch; each is sent only
when its fields are set, so v0 is unchanged."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidRequestError, UnsupportedVersionError
from spark_stream.protocol import (
    ApiKey,
    FetchLocalRequest,
    FetchRequest,
    Request,
    StreamFetchRequest,
)

A = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01"
PLAIN = {
    "topic": "t",
    "partition": 0,
    "offset": 5,
    "max_bytes": 1048576,
    "isolation": "committed",
    "max_wait_ms": 0,
}


def received(api: ApiKey, meta: dict[str, object], version: int) -> object:
    return Request(int(api), version, meta, memoryview(b"")).message()


@pytest.mark.parametrize("cls", [FetchRequest, FetchLocalRequest])
def test_a_plain_fetch_is_version_0_with_exactly_the_v0_fields(cls: type[FetchRequest]) -> None:
    msg = cls("t", 0, 5)
    assert msg.wire_version() == 0
    assert msg.to_meta() == PLAIN


def test_a_plain_stream_is_version_0_with_exactly_the_v0_fields() -> None:
    msg = StreamFetchRequest("t", 0, 5)
    assert msg.wire_version() == 0
    assert set(msg.to_meta()) == {"topic", "partition", "offset", "max_bytes", "isolation"}


@pytest.mark.parametrize(
    ("api", "cls"),
    [
        (ApiKey.FETCH, FetchRequest),
        (ApiKey.FETCH_LOCAL, FetchLocalRequest),
        (ApiKey.STREAM_FETCH, StreamFetchRequest),
    ],
)
def test_a_group_read_is_version_1_and_round_trips(api: ApiKey, cls: type) -> None:
    msg = cls("t", 0, 5, group="billing", member_id=A, grant_epoch=3)
    assert msg.wire_version() == 1
    assert received(api, msg.to_meta(), 1) == msg


@pytest.mark.parametrize(
    ("meta", "version", "named"),
    [
        ({**PLAIN, "group": "g", "member_id": A, "grant_epoch": 1}, 0, "needs version 1"),
        (PLAIN, 1, "group is required"),
        ({**PLAIN, "group": "g", "grant_epoch": 1}, 1, "member_id is required"),
        ({**PLAIN, "group": "g", "member_id": A}, 1, "grant_epoch is required"),
        ({**PLAIN, "group": "", "member_id": A, "grant_epoch": 1}, 1, "group must not be empty"),
        ({**PLAIN, "group": "g", "member_id": A, "grant_epoch": -1}, 1, "grant_epoch must be >= 0"),
        ({**PLAIN, "group": 7, "member_id": A, "grant_epoch": 1}, 1, "group"),
    ],
)
def test_malformed_group_fields_are_named(
    meta: dict[str, object], version: int, named: str
) -> None:
    with pytest.raises(InvalidRequestError, match=named):
        received(ApiKey.FETCH, meta, version)


@pytest.mark.parametrize(
    ("api", "cls"),
    [
        (ApiKey.FETCH, FetchRequest),
        (ApiKey.FETCH_LOCAL, FetchLocalRequest),
        (ApiKey.STREAM_FETCH, StreamFetchRequest),
    ],
)
@pytest.mark.parametrize("group", [{}, {"group": "billing", "member_id": A, "grant_epoch": 3}])
def test_a_read_with_a_leader_epoch_is_version_2_and_round_trips(
    api: ApiKey, cls: type, group: dict[str, object]
) -> None:
    msg = cls("t", 0, 5, leader_epoch=4, **group)
    assert msg.wire_version() == 2
    assert msg.to_meta()["leader_epoch"] == 4
    assert received(api, msg.to_meta(), 2) == msg


def test_no_leader_epoch_is_minus_1_and_not_sent() -> None:
    msg = FetchRequest("t", 0, 5, group="billing", member_id=A, grant_epoch=3)
    assert msg.leader_epoch == -1
    assert "leader_epoch" not in msg.to_meta()
    assert "leader_epoch" not in StreamFetchRequest("t", 0, 5).to_meta()


@pytest.mark.parametrize(
    ("meta", "version", "named"),
    [
        ({**PLAIN, "leader_epoch": 1}, 0, "leader_epoch needs version 2"),
        ({**PLAIN, "group": "g", "member_id": A, "grant_epoch": 1, "leader_epoch": 1}, 1,
         "leader_epoch needs version 2"),
        (PLAIN, 2, "leader_epoch is required at version 2"),
        ({**PLAIN, "leader_epoch": -2}, 2, "leader_epoch must be >= 0, or -1"),
        ({**PLAIN, "leader_epoch": "1"}, 2, "leader_epoch"),
        ({**PLAIN, "group": "g", "leader_epoch": 1}, 2, "member_id is required"),
    ],
)  # fmt: skip
def test_malformed_leader_epochs_are_named(
    meta: dict[str, object], version: int, named: str
) -> None:
    with pytest.raises(InvalidRequestError, match=named):
        received(ApiKey.FETCH, meta, version)


def test_a_version_beyond_the_range_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersionError, match=r"speaks 0\.\.2"):
        received(ApiKey.FETCH, PLAIN, 3)
