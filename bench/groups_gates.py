"""Gate distribution benchmark: the SC's cost to queue gates after one change.

Pure Python, no cluster: a ``ConnectionManager`` with 3 attached SPU sessions (nothing
reads their pushes), ``--topics`` topics of 6 partitions (RF 3) and ``--groups`` groups,
each with 2 members reading one topic (groups spread evenly over the topics). It times,
best of ``--rounds``, what the SC does on the event loop for:

- a leader change of one partition (``CmLeaderChange``);
- one group's new plan (``sync_groups`` with that group's generation bumped).

Each round ends by dropping what was queued, so the sessions stay comparable. Prints a
table and, as the last line, one JSON object.

    ./dev bench groups_gates [--groups 1000] [--topics 100] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from sc.actions import CmAddPartition, CmAddSpu, CmLeaderChange
from sc.connection_manager import ConnectionManager
from spark_stream.models import (
    ConsumerGroup,
    ConsumerGroupStatus,
    GroupGrant,
    GroupMember,
    GroupState,
    Partition,
    PartitionSpec,
    PartitionStatus,
    PublicEndpoint,
    Spu,
    SpuSpec,
)

PARTITIONS = 6


def _group(name: str, topic: str, generation: int) -> ConsumerGroup:
    members = sorted(str(uuid.UUID(int=(hash((name, i)) & (2**64 - 1)) + 1)) for i in (0, 1))
    grants = tuple(
        GroupGrant(topic=topic, partition=p, member_id=members[p % 2], grant_epoch=generation)
        for p in range(PARTITIONS)
    )
    status = ConsumerGroupStatus(
        state=GroupState.STABLE,
        generation=generation,
        group_epoch=generation,
        members=tuple(GroupMember(member_id=m, topics=(topic,)) for m in members),
        assignment=grants,
    )
    return ConsumerGroup.new(name, status=status).with_revision(generation)


def _setup(groups: int, topics: int) -> tuple[ConnectionManager, dict[str, ConsumerGroup]]:
    cm = ConnectionManager(10.0, lambda _: None)
    for spu_id in (1, 2, 3):
        spu = SpuSpec(spu_id=spu_id, public_endpoint=PublicEndpoint(port=9005))
        cm.apply(CmAddSpu(Spu.new(f"spu-{spu_id}", spu)))
    for t in range(topics):
        for p in range(PARTITIONS):
            replicas = tuple((p + i) % 3 + 1 for i in range(3))
            spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas)
            cm.apply(CmAddPartition(Partition.new(f"t{t}", p, spec, PartitionStatus())))
    for spu_id in (1, 2, 3):
        cm.attach(spu_id, lambda: None)
    by_name = {f"g{i}": _group(f"g{i}", f"t{i % topics}", 1) for i in range(groups)}
    cm.sync_groups(by_name.values())
    _drain(cm)
    return cm, by_name


def _drain(cm: ConnectionManager) -> int:
    queued = 0
    for session in cm.sessions.values():
        queued += session.pending
        session._gates.clear()  # nothing reads the pushes here
        session._replicas.clear()
    return queued


def _best_ms(fn: Callable[[int], Any], rounds: int) -> float:
    best = float("inf")
    for i in range(rounds):
        start = time.perf_counter()
        fn(i)
        best = min(best, time.perf_counter() - start)
    return round(best * 1e3, 3)


def run(groups: int, topics: int, rounds: int) -> dict[str, Any]:
    """Time a leader change and a plan change at this size."""
    cm, by_name = _setup(groups, topics)
    queued = {"leader": 0, "plan": 0}

    def leader_change(i: int) -> None:
        cm.apply(CmLeaderChange("t0-0", 1 + (i % 2), (1, 2, 3)))
        queued["leader"] = _drain(cm)

    def plan_change(i: int) -> None:
        by_name["g0"] = _group("g0", "t0", 2 + i)
        cm.sync_groups(by_name.values())
        queued["plan"] = _drain(cm)

    result = {
        "groups": groups,
        "topics": topics,
        "leader_change_ms": _best_ms(leader_change, rounds),
        "plan_change_ms": _best_ms(plan_change, rounds),
    }
    # What one change queued (gate entries and replica changes, all sessions): a check
    # that the timed work is the real work.
    return {
        **result,
        "leader_change_queued": queued["leader"],
        "plan_change_queued": queued["plan"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    result = run(args.groups, args.topics, args.rounds)
    print(f"{'groups':>8} {'topics':>8} {'leader change ms':>18} {'plan change ms':>16}")
    print(
        f"{result['groups']:>8} {result['topics']:>8} {result['leader_change_ms']:>18} "
        f"{result['plan_change_ms']:>16}"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
