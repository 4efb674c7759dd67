"""The dispatcher's reducer: one row per sentence of seed 002 on dispatch and controllers,
and one per case of a deleted or re-created partition (purges, incarnations)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_stream.models import PartitionSpec, TopicSettings
from spark_stream.protocol.control import Replica, ReplicaId
from spu.dispatch_plan import (
    Action,
    CloseLog,
    OpenLog,
    RemoveStorage,
    Roles,
    SetFollowed,
    StartFollower,
    StartLeader,
    StopFollower,
    StopLeader,
    UpdateLeader,
    merge_replicas,
    plan_controllers,
    plan_logs,
    storage_config,
)
from spu.storage import LogConfig

ME = 1


def after(roles: Roles, actions: Iterable[Action]) -> Roles:
    """The roles once ``actions`` ran, every one succeeding (what the dispatcher's shell does)."""
    leaders, logs = list(roles.leaders), dict(roles.logs)
    followers = dict(roles.followers)
    for action in actions:
        match action:
            case StopLeader(name):
                leaders.remove(name)
            case SetFollowed(leader_id, names):
                followers[leader_id] = frozenset(names)
            case CloseLog(name):
                del logs[name]
            case OpenLog(replica):
                logs[replica.name] = replica.uid
            case RemoveStorage(entry):
                assert entry.name not in logs  # never the directory of an open log
            case StartLeader(replica):
                leaders.append(replica.name)
            case StartFollower(leader_id):
                followers[leader_id] = frozenset()
            case StopFollower(leader_id):
                del followers[leader_id]
            case UpdateLeader():
                pass
    return Roles(tuple(leaders), logs, followers)


def plan(
    spu_id: int, replicas: Iterable[Replica], current: Roles, purge: Iterable[ReplicaId] = ()
) -> list[Action]:
    """Both halves of a reconciliation as if every log opens."""
    entries = list(replicas)
    first = plan_logs(spu_id, entries, current, purge)
    return first + plan_controllers(spu_id, entries, after(current, first))


def rep(
    name: str,
    leader: int | None,
    replicas: tuple[int, ...],
    revision: int = 1,
    uid: str | None = None,
) -> Replica:
    spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas)
    return Replica(name, leader, spec, revision, uid)


def roles(
    leaders: tuple[str, ...] = (),
    logs: tuple[str, ...] | Mapping[str, str | None] = (),
    followers: Mapping[int, tuple[str, ...]] | None = None,
) -> Roles:
    """Roles; logs given as bare names store the incarnation with no uid."""
    follows = {i: frozenset(names) for i, names in (followers or {}).items()}
    opened = dict.fromkeys(logs) if isinstance(logs, tuple) else dict(logs)
    return Roles(leaders, opened, follows)


LED = rep("a-0", ME, (ME, 2))  # led here
LED_V2 = rep("a-0", ME, (ME, 2, 3), revision=2)  # its spec changed
LED_BY_2 = rep("a-0", 2, (ME, 2), revision=2)  # leadership moved to SPU 2
LED_BY_3 = rep("b-0", 3, (ME, 2, 3), revision=2)  # b-0's leadership moved from 2 to 3
FOLLOWED = rep("b-0", 2, (2, ME, 3))  # led by SPU 2
FOLLOWED_TOO = rep("c-0", 2, (2, ME))  # led by SPU 2 as well
NOW_LED_HERE = rep("b-0", ME, (2, ME, 3), revision=2)  # b-0 moved to this SPU
ELSEWHERE = rep("d-0", 2, (2, 3))  # not held here
MOVED_AWAY = rep("b-0", 2, (2, 3), revision=2)  # b-0 reassigned to SPUs 2 and 3
LEADERLESS = rep("b-0", None, (2, ME, 3), revision=2)  # no replica may lead b-0 now
NOT_LISTED = rep("e-0", ME, (2, 3))  # led here though not among the replicas

RUNNING = roles(leaders=("a-0",), logs=("a-0", "b-0"), followers={2: ("b-0",)})

ROWS: list[tuple[str, list[Replica], Roles, list[Action]]] = [
    # seed: "receives SPU and Partition specs from the SC"
    ("receives specs: replicas held elsewhere are ignored", [ELSEWHERE], roles(), []),
    ("receives specs: an empty push on an idle SPU changes nothing", [], roles(), []),
    # seed: "dispatches SPU and Partition specs to Leader Controller"
    ("dispatches a changed spec to the running leader", [LED_V2, FOLLOWED], RUNNING,
     [UpdateLeader(LED_V2)]),
    # seed: "dispatches Partition spec to Follower Controllers"
    ("dispatches a new follower spec to the running follower controller",
     [LED, FOLLOWED, FOLLOWED_TOO], RUNNING,
     [OpenLog(FOLLOWED_TOO), UpdateLeader(LED), SetFollowed(2, ("b-0", "c-0"))]),
    # seed: "spawns Leader and Follower Controllers (if needed)"
    ("spawns leader and follower controllers on a first push", [LED, FOLLOWED], roles(),
     [OpenLog(LED), OpenLog(FOLLOWED), StartLeader(LED), StartFollower(2),
      SetFollowed(2, ("b-0",))]),
    ("spawns nothing when they run: the leader only takes the spec", [LED, FOLLOWED], RUNNING,
     [UpdateLeader(LED)]),
    # seed: "An LC is spawned ... when a new Leader Replica Spec is received"
    ("new leader replica spec: its log opens, then its leader starts", [LED], roles(),
     [OpenLog(LED), StartLeader(LED)]),
    ("led here though not among the replicas: still led", [NOT_LISTED], roles(),
     [OpenLog(NOT_LISTED), StartLeader(NOT_LISTED)]),
    # seed: "When the Replica is removed, the LC is terminated but the storage is preserved"
    ("leader replica removed: leader stopped, then its log closed (storage kept)", [FOLLOWED],
     RUNNING, [StopLeader("a-0"), CloseLog("a-0")]),
    # seed: "If a Replica with the same id is created again, the storage is reattached"
    ("same replica id again: its log reopens, a new leader starts", [LED_V2], roles(),
     [OpenLog(LED_V2), StartLeader(LED_V2)]),
    # seed: "The FC is spawned ... when Follower Spec is new and No FC has been created"
    ("new follower spec, no follower controller: one spawned", [FOLLOWED], roles(),
     [OpenLog(FOLLOWED), StartFollower(2), SetFollowed(2, ("b-0",))]),
    ("one follower controller per leader SPU", [FOLLOWED, FOLLOWED_TOO], roles(),
     [OpenLog(FOLLOWED), OpenLog(FOLLOWED_TOO), StartFollower(2),
      SetFollowed(2, ("b-0", "c-0"))]),
    # seed: "The FC is terminated when the last Follower Spec is removed ... storage preserved"
    ("last follower spec removed: dropped, log closed, controller stopped", [LED], RUNNING,
     [SetFollowed(2, ()), CloseLog("b-0"), UpdateLeader(LED), StopFollower(2)]),
    ("a follower spec removed, others left: the controller keeps running", [FOLLOWED],
     roles(logs=("b-0", "c-0"), followers={2: ("b-0", "c-0")}),
     [SetFollowed(2, ("b-0",)), CloseLog("c-0")]),
    # role changes
    ("leader becomes follower: the log stays open for the follower", [LED_BY_2],
     roles(leaders=("a-0",), logs=("a-0",)),
     [StopLeader("a-0"), StartFollower(2), SetFollowed(2, ("a-0",))]),
    ("follower becomes leader", [NOW_LED_HERE], roles(logs=("b-0",), followers={2: ("b-0",)}),
     [SetFollowed(2, ()), StartLeader(NOW_LED_HERE), StopFollower(2)]),
    ("leadership moves to another SPU: followed from there", [LED, LED_BY_3], RUNNING,
     [SetFollowed(2, ()), UpdateLeader(LED), StartFollower(3), SetFollowed(3, ("b-0",)),
      StopFollower(2)]),
    ("replica no longer held here: dropped and closed", [LED, MOVED_AWAY], RUNNING,
     [SetFollowed(2, ()), CloseLog("b-0"), UpdateLeader(LED), StopFollower(2)]),
    ("no replica may lead: log kept open, no controller", [LED, LEADERLESS], RUNNING,
     [SetFollowed(2, ()), UpdateLeader(LED), StopFollower(2)]),
    ("a leader loses its leader: stopped, log kept open", [LEADERLESS],
     roles(leaders=("b-0",), logs=("b-0",)), [StopLeader("b-0")]),
    # the order of one push that changes everything
    ("leaders stop and followers drop before logs close; logs open before leaders start",
     [NOW_LED_HERE, rep("d-0", 3, (3, ME))], RUNNING,
     [StopLeader("a-0"), SetFollowed(2, ()), CloseLog("a-0"), OpenLog(rep("d-0", 3, (3, ME))),
      StartLeader(NOW_LED_HERE), StartFollower(3), SetFollowed(3, ("d-0",)),
      StopFollower(2)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("replicas", "current", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_dispatch_plan(replicas: list[Replica], current: Roles, expected: list[Action]) -> None:
    assert plan(ME, replicas, current) == expected


@pytest.mark.parametrize(("replicas", "current"), [r[1:3] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_plan_carried_out_leaves_only_spec_updates(
    replicas: list[Replica], current: Roles
) -> None:
    settled = after(current, plan(ME, replicas, current))
    assert all(isinstance(a, UpdateLeader) for a in plan(ME, replicas, settled))


def test_a_log_that_failed_to_open_gets_no_controller() -> None:
    """The dispatcher plans the controllers on the logs that actually opened."""
    replicas = [LED, FOLLOWED_TOO]
    first = plan_logs(ME, replicas, RUNNING)
    assert first == [SetFollowed(2, ()), CloseLog("b-0"), OpenLog(FOLLOWED_TOO)]
    opened = after(RUNNING, first)
    without_c = Roles(opened.leaders, {"a-0": None}, opened.followers)  # c-0 failed to open
    # The follower controller of SPU 2 lost b-0 and gets nothing else: it stops.
    assert plan_controllers(ME, replicas, without_c) == [UpdateLeader(LED), StopFollower(2)]
    new_leader = rep("f-0", ME, (ME,))
    assert plan_controllers(ME, [new_leader], Roles()) == []


def test_roles_are_immutable() -> None:
    followers = {2: frozenset({"b-0"})}
    logs: dict[str, str | None] = {"b-0": "u1"}
    current = Roles(logs=logs, followers=followers)
    followers[3] = frozenset()
    logs["c-0"] = None
    assert dict(current.followers) == {2: frozenset({"b-0"})}  # a copy, not a view
    assert dict(current.logs) == {"b-0": "u1"}
    assert not isinstance(current.followers, MutableMapping)
    assert not isinstance(current.logs, MutableMapping)


# -- deleted and re-created partitions ------------------------------------------------

LED_AGAIN = rep("a-0", ME, (ME, 2), revision=9, uid="new")  # a-0's topic deleted, re-created
FOLLOWED_AGAIN = rep("b-0", 2, (2, ME, 3), revision=9, uid="new")  # the same for b-0
STORED_ONLY = ReplicaId("z-0", "old")  # a directory of a replica not held (moved away)

PURGE_ROWS: list[tuple[str, list[Replica], Roles, list[ReplicaId], list[Action]]] = [
    ("re-created while led here: leader stopped, log closed and opened anew, new leader",
     [LED_AGAIN, FOLLOWED], RUNNING, [],
     [StopLeader("a-0"), CloseLog("a-0"), OpenLog(LED_AGAIN), StartLeader(LED_AGAIN)]),
    ("re-created while followed here: dropped, log closed and opened anew, followed again",
     [LED, FOLLOWED_AGAIN], RUNNING, [],
     [SetFollowed(2, ()), CloseLog("b-0"), OpenLog(FOLLOWED_AGAIN), UpdateLeader(LED),
      SetFollowed(2, ("b-0",))]),
    ("deleted while led here: leader stopped, log closed, then its storage removed",
     [FOLLOWED], RUNNING, [LED.id],
     [StopLeader("a-0"), CloseLog("a-0"), RemoveStorage(LED.id)]),
    ("a purge outranks an entry still held: dropped as if deleted, storage removed",
     [LED, FOLLOWED], RUNNING, [LED.id],
     [StopLeader("a-0"), CloseLog("a-0"), RemoveStorage(LED.id)]),
    ("deleted while followed here: dropped, closed, removed, controller stopped",
     [LED], RUNNING, [FOLLOWED.id],
     [SetFollowed(2, ()), CloseLog("b-0"), RemoveStorage(FOLLOWED.id), UpdateLeader(LED),
      StopFollower(2)]),
    ("storage of a replica not held (moved away, or deleted while the SPU was down)",
     [], roles(), [STORED_ONLY], [RemoveStorage(STORED_ONLY)]),
    ("the old incarnation purged, the new one held: its log is left alone",
     [LED_AGAIN], roles(leaders=("a-0",), logs={"a-0": "new"}), [LED.id],
     [UpdateLeader(LED_AGAIN)]),
    ("the old incarnation purged as the new one arrives: reopened, nothing removed",
     [LED_AGAIN, FOLLOWED], RUNNING, [LED.id],
     [StopLeader("a-0"), CloseLog("a-0"), OpenLog(LED_AGAIN), StartLeader(LED_AGAIN)]),
    ("a purge repeated in one push removes once", [], roles(), [STORED_ONLY, STORED_ONLY],
     [RemoveStorage(STORED_ONLY)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("replicas", "current", "purge", "expected"),
    [r[1:] for r in PURGE_ROWS],
    ids=[r[0] for r in PURGE_ROWS],
)
def test_deleted_and_recreated_partitions(
    replicas: list[Replica], current: Roles, purge: list[ReplicaId], expected: list[Action]
) -> None:
    assert plan(ME, replicas, current, purge) == expected
    # A purge is done once; the dispatcher's view no longer holds what it named.
    view = [r for r in replicas if r.id not in purge]
    settled = after(current, expected)
    assert all(isinstance(a, UpdateLeader) for a in plan(ME, view, settled))


# -- convergence from any state the plans reached --------------------------------------

NAMES = ("a-0", "b-0", "c-0", "d-0")
_entry = st.tuples(
    st.sampled_from([None, 1, 2, 3]),
    st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=3, unique=True),
    st.sampled_from([None, "u1", "u2"]),  # a topic deleted and created again
)
_push = st.dictionaries(st.sampled_from(NAMES), _entry, max_size=len(NAMES))
_Push = dict[str, tuple[int | None, list[int], str | None]]


def _replicas(push: _Push) -> list[Replica]:
    return [rep(name, leader, tuple(reps), uid=uid) for name, (leader, reps, uid) in push.items()]


def _check_logs_in_use(current: Roles, action: Action) -> None:
    """A log closes only once no controller uses it; controllers get only open logs."""
    match action:
        case CloseLog(name):
            assert name not in current.leaders
            assert all(name not in followed for followed in current.followers.values())
        case StartLeader(replica):
            assert replica.name in current.logs and current.logs[replica.name] == replica.uid
        case SetFollowed(_, names):
            assert set(names) <= set(current.logs)
        case RemoveStorage(entry):
            assert entry.name not in current.logs


def _check_settled(current: Roles, replicas: list[Replica]) -> None:
    """One leader per replica led here, one open log per held replica, one follower
    controller per other leader, following exactly its replicas; nothing left to do."""
    held = {r.name: r for r in replicas if ME in r.replicas or r.leader == ME}
    assert dict(current.logs) == {name: r.uid for name, r in held.items()}
    assert sorted(current.leaders) == sorted(n for n, r in held.items() if r.leader == ME)
    expected: dict[int, frozenset[str]] = {}
    for name, r in held.items():
        if r.leader is not None and r.leader != ME:
            expected[r.leader] = expected.get(r.leader, frozenset()) | {name}
    assert dict(current.followers) == expected
    assert all(isinstance(a, UpdateLeader) for a in plan(ME, replicas, current))


@settings(max_examples=200, deadline=None)
@given(st.lists(_push, min_size=1, max_size=5))
def test_each_plan_reaches_its_specs(pushes: list[_Push]) -> None:
    """From whatever earlier pushes left running, a push's plan never closes a log in use
    and leaves exactly the roles its specs ask for."""
    current = Roles()
    for push in pushes:
        replicas = _replicas(push)
        for action in plan(ME, replicas, current):
            _check_logs_in_use(current, action)
            current = after(current, [action])
        _check_settled(current, replicas)


# -- storage settings --------------------------------------------------------------------


def test_storage_config_takes_the_topic_settings() -> None:
    topic = TopicSettings(retention_secs=60, segment_size=4096, max_partition_size=10_000)
    config = storage_config(topic, max_batch_bytes=1024)
    assert (config.retention_ms, config.segment_max_bytes, config.retention_bytes) == (
        60_000,
        4096,
        10_000,
    )
    assert (config.max_batch_bytes, config.flush_bytes, config.flush_interval_ms) == (
        1024,
        None,
        None,
    )


def test_storage_config_defaults_to_the_engine() -> None:
    config = storage_config(TopicSettings(), max_batch_bytes=1024)
    engine = LogConfig()
    assert (config.retention_bytes, config.segment_max_bytes, config.retention_ms) == (
        engine.retention_bytes,
        engine.segment_max_bytes,
        engine.retention_ms,
    )
    assert config.segment_max_bytes == 1 << 30


def test_the_topic_segment_size_is_kept_below_the_largest_batch() -> None:
    # Not raised to max_batch_bytes: a larger batch gets a segment of its own instead.
    config = storage_config(TopicSettings(segment_size=2048), max_batch_bytes=16 << 20)
    assert (config.segment_max_bytes, config.max_batch_bytes) == (2048, 16 << 20)


def _at(name: str, leader: int, revision: int, uid: str = "u1", epoch: int = 0) -> Replica:
    spec = PartitionSpec(initial_leader=ME, replicas=(ME, 2))
    return Replica(name, leader, spec, revision, uid, epoch)


A1 = _at("a-0", ME, revision=1)
A2 = _at("a-0", 2, revision=2)  # newer revision: moved to SPU 2
A_EPOCH_3 = _at("a-0", 2, revision=2, epoch=3)
A_EPOCH_2 = _at("a-0", ME, revision=2, epoch=2)  # same revision, older epoch
A_NEW_UID = _at("a-0", ME, revision=2, uid="u2", epoch=0)  # another incarnation
A_REV_0 = _at("a-0", 2, revision=0)  # no revision: never stale by revision
B1 = _at("b-0", 2, revision=1)

MERGE_ROWS: list[tuple[str, dict[str, Replica], dict[str, object], dict[str, Replica]]] = [
    ("a full push replaces the view", {"a-0": A1}, {"entries": [B1], "full": True}, {"b-0": B1}),
    ("an incremental push adds", {"a-0": A1}, {"entries": [B1]}, {"a-0": A1, "b-0": B1}),
    ("a newer revision replaces", {"a-0": A1}, {"entries": [A2]}, {"a-0": A2}),
    ("an older revision is ignored", {"a-0": A2}, {"entries": [A1]}, {"a-0": A2}),
    ("no revision is taken", {"a-0": A2}, {"entries": [A_REV_0]}, {"a-0": A_REV_0}),
    ("an older epoch is ignored", {"a-0": A_EPOCH_3}, {"entries": [A_EPOCH_2]}, {"a-0": A_EPOCH_3}),
    (
        "another incarnation's epoch starts again",
        {"a-0": A_EPOCH_3},
        {"entries": [A_NEW_UID]},
        {"a-0": A_NEW_UID},
    ),
    ("deleted names leave", {"a-0": A1, "b-0": B1}, {"deleted": ["b-0"]}, {"a-0": A1}),
    ("a purged incarnation leaves", {"a-0": A1}, {"purge": [ReplicaId("a-0", "u1")]}, {}),
    (
        "a purge of another incarnation keeps the entry",
        {"a-0": A1},
        {"purge": [ReplicaId("a-0", "old")]},
        {"a-0": A1},
    ),
    (
        "a purge wins over an entry in the same push",
        {},
        {"entries": [A1], "full": True, "purge": [ReplicaId("a-0", "u1")]},
        {},
    ),
]


@pytest.mark.parametrize(
    ("held", "push", "expected"), [r[1:] for r in MERGE_ROWS], ids=[r[0] for r in MERGE_ROWS]
)
def test_merge_replicas(
    held: dict[str, Replica], push: dict[str, object], expected: dict[str, Replica]
) -> None:
    before = dict(held)
    entries = push.get("entries", [])
    deleted = push.get("deleted", [])
    purge = push.get("purge", [])
    assert isinstance(entries, list) and isinstance(deleted, list) and isinstance(purge, list)
    view = merge_replicas(
        held, entries, full=push.get("full") is True, deleted=deleted, purge=purge
    )
    assert view == expected
    assert held == before  # the held view is not changed in place
