"""SC control messages: round trips through msgpack, model helpers, typed validation."""

from __future__ import annotations

from typing import Any

import pytest

from spark_stream.errors import InvalidConfigError, InvalidRequestError
from spark_stream.models import (
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    PrivateEndpoint,
    PublicEndpoint,
    ReplicaStatus,
    Spu,
    SpuSpec,
    Topic,
    TopicSpec,
)
from spark_stream.protocol import (
    ApiKey,
    Message,
    Push,
    Role,
    decode_meta,
    encode_meta,
    message_type,
)
from spark_stream.protocol import control as c


def roundtrip(msg: Message) -> Message:
    meta = decode_meta(encode_meta(msg.to_meta()))
    return type(msg).from_meta(meta)


def partition(
    name: str = "orders-1", replicas: tuple[int, ...] = (2, 3), status: dict[str, Any] | None = None
) -> Partition:
    topic, index = name.rsplit("-", 1)
    spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas, segment_size=1024)
    stat = PartitionStatus.from_dict(status or {})
    return Partition.new(topic, int(index), spec, stat).with_revision(7)


SPU = Spu.new("spu-1", SpuSpec(spu_id=1, public_endpoint=PublicEndpoint(port=7000)))


@pytest.mark.parametrize(
    "msg",
    [
        c.SpuConnectRequest.build(1, "secret", PublicEndpoint(port=1), PrivateEndpoint(port=2)),
        c.SpuConnectRequest(5, "t"),
        c.SpuConnectRequest.build(
            5, "t", stored=[c.ReplicaId("a-0", "u1"), c.ReplicaId("b-1", None)]
        ),
        c.SpuConnectAccepted(1, 6.0, 12),
        c.UpdateSpus.build([SPU], full=True, revision=3),
        c.UpdateSpus.build([], full=False, deleted=[4, 5], revision=9),
        c.UpdateReplicas.build([c.Replica.from_partition(partition())], full=True, revision=8),
        c.UpdateReplicas.build([], full=False, deleted=["orders-0"], revision=9),
        c.UpdateReplicas.build([], full=False, purge=[c.ReplicaId("orders-0", "u1")]),
        c.UpdateLrsRequest.build(
            2, [c.LrsStatus("orders-1", PartitionStatus(leader=2, leo=9, hw=7))]
        ),
        c.UpdateLrsResponse(1, ["x-0"]),
        c.HeartbeatRequest(3),
        c.HeartbeatResponse(44),
        c.CreateTopicRequest("t", {"partitions": 2}, True),
        c.CreateTopicRequest("t", {"replicationFactor": 5}, allow_missing_spus=True),
        c.ListTopicsRequest(["a", "b"]),
        c.ListPartitionsRequest(None),
        c.AddPartitionsRequest("t", 3),
        c.AddPartitionsResponse({"metadata": {"name": "t"}}),
        c.ElectPreferredRequest(),
        c.ElectPreferredRequest("t"),
        c.ElectPreferredResponse(["t-0", "t-2"], ["t-1"]),
        c.RegisterSpuRequest({"spuId": 1}, "x"),
        c.UnregisterSpuRequest(spu_id=3),
        c.CreateSpuGroupRequest("g", {"replicas": 2}, update=True),
        c.WatchMetadataRequest(17),
        c.MetadataUpdate(False, 5, deleted=[{"kind": "Topic", "name": "t"}]),
    ],
    ids=lambda m: type(m).__name__,
)
def test_messages_round_trip_through_msgpack(msg: Message) -> None:
    assert roundtrip(msg) == msg


def test_every_sc_api_has_typed_messages() -> None:
    public = [k for k in ApiKey if 1000 <= k < 2000]
    for key in public:
        assert message_type(key, Role.REQUEST) is not None, key.name
        role = Role.PUSH if key is ApiKey.WATCH_METADATA else Role.RESPONSE
        assert message_type(key, role) is not None, key.name


def test_replica_leader_follows_status_then_initial_leader() -> None:
    fresh = c.Replica.from_partition(partition())
    assert (fresh.leader, fresh.topic, fresh.partition, fresh.replicas) == (2, "orders", 1, (2, 3))
    assert fresh.revision == 7
    moved = c.Replica.from_partition(partition(status={"resolution": "Online", "leader": 3}))
    assert moved.leader == 3
    lost = c.Replica.from_partition(partition(status={"resolution": "Offline"}))
    assert lost.leader is None


def test_replica_wire_form_spells_out_topic_partition_and_settings() -> None:
    wire = c.Replica.from_partition(partition()).to_wire()
    assert wire["topic"] == "orders" and wire["partition"] == 1
    assert wire["replicas"] == [2, 3]
    assert wire["spec"]["segmentSize"] == 1024
    assert c.Replica.from_wire(wire) == c.Replica.from_partition(partition())


def test_replica_carries_the_partition_uid() -> None:
    entry = c.Replica.from_partition(partition().with_uid("9c1f"))
    assert entry.uid == "9c1f" and entry.id == c.ReplicaId("orders-1", "9c1f")
    assert c.Replica.from_wire(entry.to_wire()) == entry
    assert c.Replica.from_partition(partition()).uid is None  # built outside a store


def test_replica_carries_the_leader_epoch_of_the_status() -> None:
    entry = c.Replica.from_partition(
        partition(status={"resolution": "Online", "leader": 3, "leaderEpoch": 5})
    )
    assert entry.leader_epoch == 5
    assert entry.to_wire()["leader_epoch"] == 5
    assert c.Replica.from_wire(entry.to_wire()) == entry
    older_sc = {k: v for k, v in entry.to_wire().items() if k != "leader_epoch"}
    assert c.Replica.from_wire(older_sc).leader_epoch == 0
    assert c.Replica.from_partition(partition()).leader_epoch == 0  # a new partition


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ("x", "map"),
        ({"uid": "u"}, "name"),
        ({"name": "Bad-0", "uid": "u"}, "Bad-0"),
        ({"name": "t-0", "uid": 7}, "uid"),
        ({"name": "t-0", "uid": ""}, "uid"),
    ],
)
def test_bad_replica_ids_raise_invalid_request_naming_the_field(entry: Any, field: str) -> None:
    with pytest.raises(InvalidRequestError, match=field):
        c.ReplicaId.from_wire(entry)
    with pytest.raises(InvalidRequestError, match=field):
        c.UpdateReplicas(False, purge=[entry]).purge_entries()
    with pytest.raises(InvalidRequestError, match=field):
        c.SpuConnectRequest(1, "t", stored=[entry]).stored_replicas()


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ("not a map", "map"),
        ({"spec": {}}, "name"),
        ({"name": "bad name", "spec": {"initialLeader": 1, "replicas": [1]}}, "bad name"),
        ({"name": "t-0", "spec": {"initialLeader": 9, "replicas": [1]}}, "initialLeader"),
        ({"name": "t-0", "leader": "x", "spec": {"initialLeader": 1, "replicas": [1]}}, "leader"),
        (
            {"name": "t-0", "revision": -1, "spec": {"initialLeader": 1, "replicas": [1]}},
            "revision",
        ),
        ({"name": "t-0", "uid": 5, "spec": {"initialLeader": 1, "replicas": [1]}}, "uid"),
        (
            {"name": "t-0", "leader_epoch": -1, "spec": {"initialLeader": 1, "replicas": [1]}},
            "leader_epoch",
        ),
        (
            {"name": "t-0", "leader_epoch": True, "spec": {"initialLeader": 1, "replicas": [1]}},
            "leader_epoch",
        ),
    ],
)
def test_bad_replica_entries_raise_invalid_request_naming_the_field(entry: Any, field: str) -> None:
    with pytest.raises(InvalidRequestError, match=field):
        c.Replica.from_wire(entry)


def test_lrs_entries_need_a_leader_and_valid_status() -> None:
    ok = c.LrsStatus("t-0", PartitionStatus(leader=1, lrs=(ReplicaStatus(spu_id=2, leo=4),)))
    assert c.LrsStatus.from_wire(ok.to_wire()) == ok
    with pytest.raises(InvalidRequestError, match="leader"):
        c.LrsStatus.from_wire({"name": "t-0", "status": {"leo": 1}})
    with pytest.raises(InvalidRequestError, match="leo"):
        c.LrsStatus.from_wire({"name": "t-0", "status": {"leader": 1, "leo": -5}})
    request = c.UpdateLrsRequest(1, [{"name": 3}])
    with pytest.raises(InvalidRequestError):
        request.statuses()


def test_spu_connect_validates_id_and_endpoints() -> None:
    with pytest.raises(InvalidRequestError, match="spu_id"):
        c.SpuConnectRequest(-1, "t")
    with pytest.raises(InvalidRequestError, match="spu_id"):
        c.SpuConnectRequest.from_meta({"spu_id": "one", "token": "t"})
    with pytest.raises(InvalidRequestError, match="port"):
        c.SpuConnectRequest(1, "t", {"port": 70000}).endpoints()
    public, private = c.SpuConnectRequest.build(1, "t", PublicEndpoint(port=5)).endpoints()
    assert public == PublicEndpoint(port=5) and private is None


def test_update_pushes_turn_back_into_models() -> None:
    push = c.UpdateSpus.build([SPU], full=True)
    assert roundtrip(push).spu_objects() == [SPU]  # type: ignore[attr-defined]
    with pytest.raises(InvalidRequestError, match="spuId"):
        c.UpdateSpus(True, [{"metadata": {"name": "x"}, "spec": {}}]).spu_objects()
    topic = Topic.new("t", TopicSpec(partitions=2))
    update = c.MetadataUpdate(
        True, 3, spus=[SPU.to_dict()], topics=[topic.to_dict()], partitions=[partition().to_dict()]
    )
    spus, topics, partitions = update.objects()
    assert (spus, topics, partitions) == ([SPU], [topic], [partition()])


def test_push_payload_decodes_by_its_api_key() -> None:
    msg = c.UpdateReplicas.build([], full=True, revision=2)
    push = Push(ApiKey.UPDATE_REPLICAS, 0, decode_meta(encode_meta(msg.to_meta())), memoryview(b""))
    assert push.message() == msg


def test_create_topic_reports_the_bad_field() -> None:
    with pytest.raises(InvalidConfigError, match="partitions"):
        c.CreateTopicRequest("t", {"partitions": 0}).topic()
    with pytest.raises(InvalidConfigError, match="name"):
        c.CreateTopicRequest("Bad_Name", {}).topic()
    with pytest.raises(InvalidRequestError, match="name"):
        c.CreateTopicRequest("", {})
    assert c.CreateTopicRequest("t", {"partitions": 3}).topic().spec.partitions == 3


@pytest.mark.parametrize(
    ("cls", "meta"),
    [
        (c.CreateTopicRequest, {"spec": {}}),
        (c.DeleteTopicRequest, {}),
        (c.DescribeTopicRequest, {}),
        (c.AddPartitionsRequest, {"count": 1}),
        (c.CreateSpuGroupRequest, {"spec": {}}),
        (c.DeleteSpuGroupRequest, {}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_requests_naming_an_object_refuse_an_empty_name(cls: type[Message], meta: dict) -> None:
    with pytest.raises(InvalidRequestError, match=rf"^{cls.__name__}\.name must not be empty$"):
        cls.from_meta({"name": "", **meta})
    assert cls.from_meta({"name": "x", **meta}).to_meta()["name"] == "x"


@pytest.mark.parametrize("count", [0, -2])
def test_add_partitions_only_adds(count: int) -> None:
    # Partitions are never removed: a count below 1 is refused before it is sent, and
    # by the SC when it decodes the request.
    with pytest.raises(InvalidConfigError, match=r"^count: partitions can only be added"):
        c.AddPartitionsRequest.from_meta({"name": "t", "count": count})
    with pytest.raises(InvalidConfigError, match=r"^count: partitions can only be added"):
        c.AddPartitionsRequest("t", count)
    with pytest.raises(InvalidRequestError, match="count: expected an integer"):
        c.AddPartitionsRequest.from_meta({"name": "t", "count": "3"})
    with pytest.raises(InvalidConfigError, match="count: expected an integer"):
        c.AddPartitionsRequest("t", "3")  # type: ignore[arg-type]


def test_requests_with_contradictory_fields_are_refused() -> None:
    with pytest.raises(InvalidRequestError):
        c.UnregisterSpuRequest()
    with pytest.raises(InvalidRequestError):
        c.UnregisterSpuRequest(spu_id=1, name="x")
    with pytest.raises(InvalidRequestError, match="from_revision"):
        c.WatchMetadataRequest(-2)
    with pytest.raises(InvalidConfigError, match="replicas"):
        c.CreateSpuGroupRequest("g", {"replicas": -1}).group()


def test_partition_status_resolution_is_carried() -> None:
    entry = c.LrsStatus("t-0", PartitionStatus(leader=1, resolution=PartitionResolution.ONLINE))
    assert c.LrsStatus.from_wire(entry.to_wire()).status.resolution is PartitionResolution.ONLINE


def test_elect_preferred_request_refuses_an_empty_topic() -> None:
    with pytest.raises(InvalidRequestError, match="topic must not be empty"):
        c.ElectPreferredRequest("")
