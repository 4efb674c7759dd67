"""Consumer-group plan benchmark: milliseconds to plan, and partitions moved.

Pure Python, no cluster. For each size (members x partitions of one topic every member
subscribes to) it times the assignor (``sc.controllers.group.assignor.assign``) on a
first plan, a re-plan of the published plan (what a seeded SC computes), one member
joining and one leaving, and counts the partitions the join and the leave move. At
1,000 x 10,000 it also times the whole group reducer on a join, a leave and a seed
(the assignor plus building the status, the gates and the pushes). Each figure is the
best of ``--rounds``. Prints a table and, as the last line, one JSON object.

    ./dev bench groups_plan [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from sc.controllers.group import (
    GroupSnapshot,
    MemberJoined,
    MemberLeft,
    Seed,
    TopicPartition,
    assign,
    reduce,
)
from spark_stream.models import (
    ConsumerGroup,
    ConsumerGroupStatus,
    GroupGrant,
    GroupMember,
    GroupState,
)

SIZES = ((3, 6), (10, 100), (100, 1_000), (300, 5_000), (1_000, 10_000))


def _best_ms(fn: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return round(best * 1e3, 3)


def _ids(n: int) -> list[str]:
    return [str(uuid.UUID(int=i + 1, version=4)) for i in range(n)]


def _moves(before: dict[TopicPartition, str], after: dict[TopicPartition, str]) -> int:
    return sum(1 for tp, m in before.items() if after.get(tp, m) != m)


def plan_case(members: int, partitions: int, rounds: int) -> dict[str, float | int]:
    """Assignor timings and moves for one size."""
    ids = _ids(members + 1)
    topics = {"t": partitions}
    subs = {m: ("t",) for m in ids[:members]}
    plan = assign(topics, subs, {})
    joined = {**subs, ids[members]: ("t",)}
    left = {m: t for m, t in subs.items() if m != ids[0]}
    return {
        "first_ms": _best_ms(lambda: assign(topics, subs, {}), rounds),
        "seeded_ms": _best_ms(lambda: assign(topics, subs, plan), rounds),
        "join_ms": _best_ms(lambda: assign(topics, joined, plan), rounds),
        "leave_ms": _best_ms(lambda: assign(topics, left, plan), rounds),
        "join_moves": _moves(plan, assign(topics, joined, plan)),
        "leave_moves": _moves(plan, assign(topics, left, plan)),
    }


def reducer_case(members: int, partitions: int, rounds: int) -> dict[str, float]:
    """Whole-reducer timings on a stable group of this size."""
    ids = _ids(members + 1)
    plan = assign({"t": partitions}, {m: ("t",) for m in ids[:members]}, {})
    status = ConsumerGroupStatus(
        state=GroupState.STABLE,
        generation=1,
        group_epoch=members,
        members=tuple(GroupMember(member_id=m, topics=("t",)) for m in ids[:members]),
        assignment=tuple(
            GroupGrant(topic=t, partition=p, member_id=m, grant_epoch=1)
            for (t, p), m in sorted(plan.items())
        ),
    )
    group = ConsumerGroup.new("bench", None, status).with_revision(1)
    snap = GroupSnapshot(group, {"t": partitions}, {m: i for i, m in enumerate(ids[:members])})
    join = MemberJoined(ids[members], members, 0, ("t",))
    return {
        "join_ms": _best_ms(lambda: reduce(snap, join), rounds),
        "leave_ms": _best_ms(lambda: reduce(snap, MemberLeft(ids[0], 0)), rounds),
        "seed_ms": _best_ms(lambda: reduce(snap, Seed()), rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs per figure, best kept")
    args = parser.parse_args()
    plans: dict[str, dict[str, float | int]] = {}
    for members, partitions in SIZES:
        row = plan_case(members, partitions, args.rounds)
        plans[f"{members}x{partitions}"] = row
        cells = "  ".join(f"{k} {v}" for k, v in row.items())
        print(f"assign {members:>5} x {partitions:<6} {cells}")
    reducer = reducer_case(1_000, 10_000, args.rounds)
    print("reduce  1000 x 10000  " + "  ".join(f"{k} {v}" for k, v in reducer.items()))
    print(
        json.dumps(
            {
                "bench": "groups_plan",
                "plan_ms_1000x10000": plans["1000x10000"]["first_ms"],
                "assign": plans,
                "reducer_1000x10000": reducer,
            }
        )
    )


if __name__ == "__main__":
    main()
