"""The client's metadata view: applying watch pushes and answering leader lookups."""

from __future__ import annotations

import asyncio

import pytest

from spark_stream.client.metadata import Leader, MetadataView, MetadataWatcher
from spark_stream.errors import (
    FluvioError,
    InsufficientResourcesError,
    InvalidConfigError,
    PartitionOfflineError,
    RequestTimeoutError,
)
from spark_stream.models import (
    IngressAddr,
    Partition,
    PartitionSpec,
    PartitionStatus,
    PublicEndpoint,
    Spu,
    SpuSpec,
    SpuStatus,
    Topic,
    TopicSpec,
    TopicStatus,
)
from spark_stream.net.connection import Connection
from spark_stream.protocol.control import MetadataUpdate


def spu(spu_id: int, port: int, online: bool = True) -> Spu:
    ep = PublicEndpoint(port=port, ingress=(IngressAddr(hostname="127.0.0.1"),))
    status = SpuStatus(resolution="Online" if online else "Offline")
    return Spu.new(f"spu-{spu_id}", SpuSpec(spu_id=spu_id, public_endpoint=ep), status)


def partition(
    topic: str,
    index: int,
    replicas: tuple[int, ...],
    leader: int | None,
    resolution: str = "Online",
    epoch: int = 0,
) -> Partition:
    spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas)
    status = PartitionStatus(resolution=resolution, leader=leader, leader_epoch=epoch, hw=3, leo=4)
    return Partition.new(topic, index, spec, status)


def update(
    full: bool,
    revision: int,
    *,
    spus: tuple[Spu, ...] | list[Spu] = (),
    topics: tuple[Topic, ...] | list[Topic] = (),
    parts: tuple[Partition, ...] | list[Partition] = (),
    deleted: tuple[dict[str, str], ...] | list[dict[str, str]] = (),
) -> MetadataUpdate:
    return MetadataUpdate(
        full,
        revision,
        [s.to_dict() for s in spus],
        [t.to_dict() for t in topics],
        [p.to_dict() for p in parts],
        list(deleted),
    )


def base_view() -> MetadataView:
    view = MetadataView()
    view.apply(
        update(
            True,
            5,
            spus=[spu(1, 9101), spu(2, 9102)],
            topics=[Topic.new("orders", TopicSpec(partitions=2, replication_factor=2))],
            parts=[partition("orders", 0, (1, 2), 1), partition("orders", 1, (2, 1), 2)],
        )
    )
    return view


def test_full_snapshot_gives_leaders_and_partition_infos() -> None:
    view = base_view()
    assert view.revision == 5
    assert view.partition_count("orders") == 2
    assert view.leader("orders", 0) == Leader(1, "127.0.0.1", 9101)
    infos = view.topic_partitions("orders")
    assert [(i.partition, i.leader, i.replicas, i.leader_endpoint) for i in infos] == [
        (0, 1, (1, 2), "127.0.0.1:9101"),
        (1, 2, (2, 1), "127.0.0.1:9102"),
    ]
    assert infos[0].hw == 3 and infos[0].leo == 4


def test_incremental_update_moves_a_leader() -> None:
    view = base_view()
    view.apply(update(False, 6, parts=[partition("orders", 0, (1, 2), 2)]))
    assert view.leader("orders", 0) == Leader(2, "127.0.0.1", 9102)
    assert view.revision == 6


def test_offline_leader_spu_is_no_leader() -> None:
    view = base_view()
    view.apply(update(False, 7, spus=[spu(1, 9101, online=False)]))
    assert view.leader("orders", 0) is None
    assert view.leader("orders", 1) is not None


def test_init_partition_uses_the_initial_leader() -> None:
    view = base_view()
    view.apply(update(False, 8, parts=[partition("orders", 1, (2, 1), None, "Init")]))
    assert view.leader("orders", 1) == Leader(2, "127.0.0.1", 9102)


def test_deleting_a_topic_drops_its_partitions() -> None:
    view = base_view()
    view.apply(update(False, 9, deleted=[{"kind": "Topic", "name": "orders"}]))
    assert view.partition_count("orders") is None
    assert view.topic_partitions("orders") == []
    assert view.leader("orders", 0) is None


def test_full_snapshot_replaces_everything() -> None:
    view = base_view()
    view.apply(update(True, 10, spus=[spu(3, 9103)]))
    assert view.partition_count("orders") is None
    assert view.spu(3) is not None and view.spu(1) is None


# --- partitions without a leader: which wait, which fail at once ------------------------

SHORT = "replication factor 5 needs 5 SPUs, 2 registered"
BIG = Topic.new(
    "big",
    TopicSpec(replication_factor=5),
    TopicStatus(resolution="InsufficientResources", reason=SHORT),
)
MANUAL = Topic.new(
    "manual",
    TopicSpec(replica_assignment=[{"partition": 0, "replicas": [9]}]),
    TopicStatus(resolution="InvalidConfig", reason="partition 0: unknown SPU 9"),
)
PENDING = Topic.new("young", TopicSpec(), TopicStatus(resolution="Pending"))
OFFLINE_1 = update(False, 6, spus=[spu(1, 9101, online=False)])
OFFLINE_BOTH = update(False, 6, spus=[spu(1, 9101, online=False), spu(2, 9102, online=False)])
GONE_2 = update(False, 7, deleted=[{"kind": "Spu", "name": "spu-2"}])
UNPROVISIONED = update(False, 6, topics=[BIG, MANUAL, PENDING])

NO_LEADER_ROWS: list[
    tuple[str, list[MetadataUpdate], str, bool, type[FluvioError] | None, str]
] = [
    ("leader online: no problem", [], "orders", False, None, ""),
    ("leader offline, other replica online: election, wait", [OFFLINE_1], "orders", False,
     None, ""),
    ("every replica offline: fails at once", [OFFLINE_BOTH], "orders", False,
     PartitionOfflineError, "partition orders-0 has no leader: replicas [1, 2] offline"),
    ("every replica offline in failover: a restart may be on its way, wait",
     [OFFLINE_BOTH], "orders", True, None, ""),
    ("offline and unregistered replicas", [OFFLINE_1, GONE_2], "orders", False,
     PartitionOfflineError, "replicas [1] offline, [2] unregistered"),
    ("InsufficientResources topic: fails at once", [UNPROVISIONED], "big", False,
     InsufficientResourcesError,
     f"partition big-0 has no leader: topic 'big' is not provisioned (InsufficientResources): "
     f"{SHORT}"),
    ("InsufficientResources topic in failover: still fails", [UNPROVISIONED], "big", True,
     InsufficientResourcesError, "not provisioned"),
    ("InvalidConfig topic: fails at once", [UNPROVISIONED], "manual", False,
     InvalidConfigError, "(InvalidConfig): partition 0: unknown SPU 9"),
    ("Pending topic: about to be provisioned, wait", [UNPROVISIONED], "young", False, None, ""),
    ("unknown topic: not this check's business", [], "nope", False, None, ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("updates", "topic", "failover", "error", "message"),
    [r[1:] for r in NO_LEADER_ROWS],
    ids=[r[0] for r in NO_LEADER_ROWS],
)
def test_no_leader_problem(
    updates: list[MetadataUpdate],
    topic: str,
    failover: bool,
    error: type[FluvioError] | None,
    message: str,
) -> None:
    view = base_view()
    for change in updates:
        view.apply(change)
    problem = view.no_leader_problem(topic, 0, failover=failover)
    if error is None:
        assert problem is None
    else:
        assert type(problem) is error and not problem.retriable
        assert message in str(problem)


def test_topic_problem_without_a_partition_names_the_topic() -> None:
    view = base_view()
    view.apply(UNPROVISIONED)
    assert str(view.topic_problem("big")) == (
        f"topic 'big' is not provisioned (InsufficientResources): {SHORT}"
    )
    assert view.topic_problem("young") is None and view.topic_problem("orders") is None


def test_leader_state_says_why_there_is_no_leader() -> None:
    view = base_view()
    view.apply(UNPROVISIONED)
    assert view.leader_state("young", 0) == "the partition is not created yet (topic Pending)"
    view.apply(OFFLINE_1)
    view.apply(update(False, 8, parts=[partition("orders", 0, (1, 2), 1, "LeaderOffline")]))
    assert view.leader_state("orders", 0) == (
        "partition LeaderOffline, leader 1 Offline; replicas [1, 2], online [2]"
    )


async def _never_connects() -> Connection:
    raise AssertionError("the lookup must not open a connection")


def _watcher(*changes: MetadataUpdate) -> MetadataWatcher:
    """A watcher whose view holds ``base_view`` plus ``changes`` and never receives more."""
    watcher = MetadataWatcher(_never_connects)
    watcher.view = base_view()
    for change in changes:
        watcher.view.apply(change)
    return watcher


def test_leader_lookup_fails_at_once_or_times_out_naming_the_state() -> None:
    async def body() -> None:
        with pytest.raises(PartitionOfflineError, match=r"replicas \[1, 2\] offline"):
            await _watcher(OFFLINE_BOTH).leader("orders", 0, 30.0)
        with pytest.raises(InsufficientResourcesError, match="not provisioned"):
            await _watcher(UNPROVISIONED).leader("big", 0, 30.0, not_spu=1)
        # In failover every replica down is waited for, and the timeout says why.
        with pytest.raises(RequestTimeoutError) as timed_out:
            await _watcher(OFFLINE_BOTH).leader("orders", 0, 0.05, not_spu=1)
        assert str(timed_out.value) == (
            "partition orders-0 has no online leader: partition Online, leader 1 Offline; "
            "replicas [1, 2], online []"
        )
        with pytest.raises(RequestTimeoutError, match=r"not created yet \(topic Pending\)"):
            await _watcher(UNPROVISIONED).leader("young", 0, 0.0)
        assert (await _watcher().leader("orders", 1, 30.0)).spu_id == 2

    asyncio.run(body())


def test_a_lookup_after_a_fenced_epoch_waits_for_newer_metadata() -> None:
    """The SPU fenced epoch 0: the SC has elected again, so the watch is about to bring
    the new leader and epoch; the lookup waits for it instead of retrying the old one."""

    async def body() -> None:
        watcher = _watcher()
        assert await watcher.leader("orders", 0, 30.0) == Leader(1, "127.0.0.1", 9101, 0)

        async def elect() -> None:  # runs once the lookup waits: the watch's next update
            watcher.view.apply(update(False, 6, parts=[partition("orders", 0, (1, 2), 2, epoch=1)]))
            await watcher._notify()

        task = asyncio.ensure_future(elect())
        found = await watcher.leader("orders", 0, 30.0, stale_epoch=0)
        await task
        assert found == Leader(2, "127.0.0.1", 9102, 1)

    asyncio.run(body())
