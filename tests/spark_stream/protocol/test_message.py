"""Typed messages, meta decoding, the api key registry."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import msgpack
import pytest

from spark_stream.errors import (
    FluvioError,
    InvalidRequestError,
    NotLeaderError,
    UnsupportedVersionError,
)
from spark_stream.protocol import (
    API_VERSIONS,
    STREAM_APIS,
    Acks,
    ApiKey,
    Encoded,
    ErrorReply,
    FetchOffsetsRequest,
    FetchOffsetsResponse,
    FetchRequest,
    FetchResponse,
    Isolation,
    Message,
    ProduceRequest,
    ProduceResponse,
    Push,
    Request,
    Role,
    StreamFetchPush,
    StreamFetchRequest,
    api_name,
    decode_meta,
    encode_meta,
    message,
    message_type,
)
from spark_stream.protocol.control import MetadataUpdate


def wire(msg: Message) -> tuple[dict, memoryview]:
    """What a receiver sees: meta through msgpack, tail as a memoryview."""
    tail = msg.tail_parts()
    raw = tail if isinstance(tail, bytes | bytearray | memoryview) else b"".join(tail)
    return decode_meta(encode_meta(msg.to_meta())), memoryview(bytes(raw))


@pytest.mark.parametrize(
    "msg",
    [
        ProduceRequest("orders", 2, Acks.ALL, 100, b"FRAMES"),
        ProduceResponse(base_offset=10, leo=15, hw=12),
        FetchRequest("orders", 0, 5, 1000, Isolation.UNCOMMITTED, 250),
        FetchResponse(hw=3, leo=4, log_start=0, tail=b"F"),
        FetchOffsetsRequest("orders", 1, timestamp_us=1_700_000_000_000_000),
        FetchOffsetsRequest("orders", 1),
        FetchOffsetsResponse(log_start=0, leo=9, hw=9, offset=None),
        StreamFetchRequest("orders", 0, 0),
        StreamFetchPush(hw=1, leo=2, log_start=0, tail=b"xyz"),
    ],
)
def test_data_messages_round_trip(msg: Message) -> None:
    meta, tail = wire(msg)
    back = type(msg).from_meta(meta, tail)
    assert back.to_meta() == msg.to_meta()
    if hasattr(msg, "tail"):
        assert bytes(back.tail) == bytes(msg.tail)  # type: ignore[attr-defined]
    assert message_type(msg.API_KEY, msg.ROLE) is type(msg)


def test_enums_travel_by_value() -> None:
    meta = FetchRequest("t", 0, 0, isolation=Isolation.UNCOMMITTED).to_meta()
    assert meta["isolation"] == "uncommitted"
    assert ProduceRequest("t", 0, Acks.ALL, tail=b"f").to_meta()["acks"] == -1
    assert "tail" not in ProduceRequest("t", 0, tail=b"f").to_meta()


def test_produce_tail_may_be_many_buffers() -> None:
    req = ProduceRequest("t", 0, tail=[b"frame1", memoryview(b"frame2")])
    assert [bytes(p) for p in req.tail_parts()] == [b"frame1", b"frame2"]


@pytest.mark.parametrize(
    ("meta", "match"),
    [
        ({"partition": 0}, "missing field 'topic'"),
        ({"topic": 5, "partition": 0}, "topic: expected a string"),
        ({"topic": "t", "partition": "0"}, "partition: expected an integer"),
        ({"topic": "t", "partition": True}, "partition: expected an integer"),
        ({"topic": "t", "partition": -1}, "partition must be >= 0"),
        ({"topic": "", "partition": 0}, "topic must not be empty"),
        ({"topic": "t", "partition": 0, "acks": 2}, "is not one of"),
    ],
)
def test_bad_produce_meta_is_invalid_request(meta: dict, match: str) -> None:
    with pytest.raises(InvalidRequestError, match=match):
        ProduceRequest.from_meta(meta, memoryview(b"frames"))


def test_produce_without_frames_is_invalid() -> None:
    with pytest.raises(InvalidRequestError, match="no batch frames"):
        ProduceRequest.from_meta({"topic": "t", "partition": 0}, memoryview(b""))
    with pytest.raises(InvalidRequestError, match="no batch frames"):
        ProduceRequest("t", 0, tail=[b"", memoryview(b"")])
    assert ProduceRequest("t", 0, tail=[b"", b"frame"]).tail_parts() == [b"", b"frame"]


def test_fetch_validates_ranges() -> None:
    with pytest.raises(InvalidRequestError, match="max_bytes must be > 0"):
        FetchRequest("t", 0, 0, max_bytes=0)
    with pytest.raises(InvalidRequestError, match="isolation"):
        FetchRequest.from_meta({"topic": "t", "partition": 0, "offset": 0, "isolation": "all"})
    with pytest.raises(InvalidRequestError, match="timestamp_us"):
        FetchOffsetsRequest.from_meta({"topic": "t", "partition": 0, "timestamp_us": "now"})


def test_unknown_meta_keys_are_ignored_for_forward_compatibility() -> None:
    resp = ProduceResponse.from_meta({"base_offset": 1, "leo": 2, "hw": 2, "new_field": "x"})
    assert resp == ProduceResponse(1, 2, 2)


def test_error_reply_maps_codes_both_ways() -> None:
    reply = ErrorReply.from_error(NotLeaderError("partition 3 moved"))
    assert reply == ErrorReply(NotLeaderError.code, "partition 3 moved")
    err = ErrorReply.from_meta(wire(reply)[0]).to_error()
    assert type(err) is NotLeaderError and err.retriable
    generic = ErrorReply.from_error(KeyError("boom"))
    assert generic.code == FluvioError.code
    assert "KeyError" in generic.message


def test_request_and_push_decode_through_the_registry() -> None:
    meta, tail = wire(FetchRequest("t", 1, 7))
    req = Request(ApiKey.FETCH, 0, meta, tail, correlation_id=4)
    assert req.message() == FetchRequest("t", 1, 7)
    push = Push(ApiKey.STREAM_FETCH, 0, {"hw": 1, "leo": 1, "log_start": 0}, memoryview(b"f"))
    assert isinstance(push.message(), StreamFetchPush)


def test_unknown_type_or_version_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersionError, match="no request message type"):
        Request(4998, 0, {}, memoryview(b"")).message()
    with pytest.raises(UnsupportedVersionError, match="version 7"):
        Request(ApiKey.FETCH, 7, {}, memoryview(b"")).message()


def test_defining_a_message_is_one_decorator() -> None:
    @message(4999, Role.REQUEST, version=2)
    @dataclass(frozen=True)
    class Probe(Message):
        names: list[str]
        labels: dict[str, int]
        ratio: float = 1.0
        note: str | None = None

    assert (Probe.API_KEY, Probe.VERSION) == (4999, 2)
    probe = Probe(["a"], {"x": 1}, 2, None)
    assert Probe.from_meta(wire(probe)[0]) == probe
    with pytest.raises(InvalidRequestError, match=r"names\[1\]: expected a string"):
        Probe.from_meta({"names": ["a", 3], "labels": {}})
    with pytest.raises(InvalidRequestError, match="labels"):
        Probe.from_meta({"names": [], "labels": {"x": "y"}})
    with pytest.raises(RuntimeError, match="already"):

        @message(4999, Role.REQUEST)
        @dataclass(frozen=True)
        class Other(Message):
            x: int


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"\xc1", "malformed"),
        (b"\x81\xa1k", "malformed"),  # truncated map
        (msgpack.packb([1, 2]), "must be a msgpack map"),
        (msgpack.packb({1: 2}), "malformed|keys must be strings"),
        (msgpack.packb({"a": 1}) + b"\x00", "malformed"),  # trailing bytes
        (msgpack.packb({"e": msgpack.ExtType(5, b"x")}), "extension type 5"),
        (b"\x91" * 5000, "malformed"),  # deep nesting
    ],
)
def test_bad_meta_bytes_are_invalid_request(raw: bytes, match: str) -> None:
    with pytest.raises(InvalidRequestError, match=match):
        decode_meta(raw)


def test_aware_datetimes_round_trip_as_utc() -> None:
    when = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    assert decode_meta(encode_meta({"at": when})) == {"at": when}


def test_api_keys_are_unique_grouped_and_versioned() -> None:
    values = [k.value for k in ApiKey]
    assert len(values) == len(set(values))
    assert all(k in API_VERSIONS for k in ApiKey)
    assert ApiKey.PRODUCE // 1000 == 3 and ApiKey.SPU_CONNECT // 1000 == 2
    assert ApiKey.STREAM_FETCH in STREAM_APIS
    assert api_name(3001) == "PRODUCE"
    assert api_name(65000) == "api 65000"


def test_encoded_is_the_message_meta_once() -> None:
    update = MetadataUpdate(False, 7, topics=[{"metadata": {"name": "t"}}])
    encoded = Encoded.of(update)
    assert (encoded.api_key, encoded.version) == (ApiKey.WATCH_METADATA, 0)
    assert MetadataUpdate.from_meta(decode_meta(encoded.meta)) == update


def test_encoded_refuses_a_message_with_a_tail() -> None:
    with pytest.raises(InvalidRequestError, match="has a tail"):
        Encoded.of(ProduceRequest("t", 0, tail=b"frames"))
