"""Group KV benchmark: fenced offset commits through ``RedisKvStore`` on a real Redis.

A fresh ``redis-server`` (append-only, everysec, as the local cluster runs it) holds one
topic of ``--partitions`` partitions and a group whose published owner map grants them
to ``--committers`` members in turn. Each commit is one ``COMMIT`` script call through
the store (validation, encoding, the script, decoding), the path the SC will take:

- sequential latency, p50 and p99, of commits of 1 and of 10 partitions;
- concurrent throughput: ``--committers`` asyncio tasks on one store (redis-py pools
  connections), each committing its own partitions, one partition per commit, then 10.

Every commit must be accepted (offsets grow): a refused one fails the run. The brief's
baseline on this machine is about 20,000 commits/s (section 5). Progress goes to stderr;
the last line is one JSON object.

    ./dev bench groups_kv [--commits 2000] [--seconds 3] [--committers 32]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sc.kv import Grant, OffsetCommit, RedisKvStore
from spark_stream.local import RedisServer
from spark_stream.models import (
    Partition,
    PartitionSpec,
    SpuGroup,
    SpuGroupSpec,
    SpuGroupStatus,
    Topic,
    TopicSpec,
)

TOPIC, GROUP = "bench", "bench-group"


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Counter:
    """Next offset per partition: each commit moves its partitions forward by one."""

    def __init__(self) -> None:
        self.next: dict[int, int] = {}

    def commits(self, partitions: list[int], grants: dict[int, Grant]) -> list[OffsetCommit]:
        out = []
        for p in partitions:
            offset = self.next.get(p, 0) + 1
            self.next[p] = offset
            out.append(OffsetCommit(TOPIC, p, offset, grants[p].grant_epoch))
        return out


async def _setup(store: RedisKvStore, partitions: int, members: int) -> dict[int, Grant]:
    """Topic, partitions, group object and a published owner map; returns the grants."""
    await store.create(Topic.new(TOPIC, TopicSpec(partitions=partitions)))
    for p in range(partitions):
        await store.create(Partition.new(TOPIC, p, PartitionSpec(initial_leader=1, replicas=(1,))))
    ids = [str(uuid.uuid4()) for _ in range(members)]
    grants = {p: Grant(ids[p % members], 1) for p in range(partitions)}
    # A stand-in group object (the group methods take kind=): commits never read it, so
    # the figures hold for the ConsumerGroup kind too.
    created = await store.create(SpuGroup.new(GROUP, SpuGroupSpec(replicas=0)))
    status = SpuGroupStatus(reason="generation 1")
    owners = {(TOPIC, p): grant for p, grant in grants.items()}
    await store.publish_group_plan(GROUP, status, owners, created.revision, kind=SpuGroup.kind)
    return grants


async def _commit(store: RedisKvStore, member: str, commits: list[OffsetCommit]) -> None:
    results = await store.commit_group_offsets(GROUP, member, commits)
    refused = [r for r in results if not r.accepted]
    if refused:
        raise SystemExit(f"commit refused: {refused[0]}")


async def _sequential(
    store: RedisKvStore, grants: dict[int, Grant], width: int, count: int, counter: Counter
) -> dict[str, float]:
    member = grants[0].member_id
    mine = [p for p, g in sorted(grants.items()) if g.member_id == member][:width]
    if len(mine) < width:
        raise SystemExit(f"member 0 owns {len(mine)} partitions, fewer than {width}")
    samples = []
    for _ in range(count):
        commits = counter.commits(mine, grants)
        start = time.perf_counter()
        await _commit(store, member, commits)
        samples.append((time.perf_counter() - start) * 1000)
    cuts = statistics.quantiles(samples, n=100)
    return {"p50_ms": round(cuts[49], 3), "p99_ms": round(cuts[98], 3)}


async def _concurrent(
    store: RedisKvStore, grants: dict[int, Grant], width: int, seconds: float, counter: Counter
) -> dict[str, float]:
    by_member: dict[str, list[int]] = {}
    for p, g in sorted(grants.items()):
        by_member.setdefault(g.member_id, []).append(p)
    deadline = time.perf_counter() + seconds
    done = [0]

    async def committer(member: str, owned: list[int]) -> None:
        cycle = itertools.cycle(range(0, len(owned), width))
        while time.perf_counter() < deadline:
            start = next(cycle)
            await _commit(store, member, counter.commits(owned[start : start + width], grants))
            done[0] += 1

    start = time.perf_counter()
    await asyncio.gather(*(committer(m, owned) for m, owned in by_member.items()))
    elapsed = time.perf_counter() - start
    return {
        "commits_per_s": round(done[0] / elapsed),
        "offsets_per_s": round(done[0] * width / elapsed),
    }


async def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    store = RedisKvStore(url, prefix="bench")
    counter = Counter()
    try:
        grants = await _setup(store, args.committers * 10, args.committers)
        await _sequential(store, grants, 1, 200, counter)  # warm up: scripts, connections
        result: dict[str, Any] = {"committers": args.committers}
        for width in (1, 10):
            seq = await _sequential(store, grants, width, args.commits, counter)
            progress(f"sequential, {width} partition(s) per commit: {seq}")
            result[f"seq_{width}p_p50_ms"] = seq["p50_ms"]
            result[f"seq_{width}p_p99_ms"] = seq["p99_ms"]
        for width in (1, 10):
            conc = await _concurrent(store, grants, width, args.seconds, counter)
            progress(f"{args.committers} committers, {width} partition(s) per commit: {conc}")
            key = "commits_per_s" if width == 1 else "commits_per_s_10p"
            result[key] = conc["commits_per_s"]
            if width == 10:
                result["offsets_per_s_10p"] = conc["offsets_per_s"]
        stored = await store.fetch_group_offsets(GROUP)
        if any(stored[(TOPIC, p)].offset != n for p, n in counter.next.items()):
            raise SystemExit("stored offsets differ from the last accepted commits")
        return result
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000, help="sequential commits per size")
    parser.add_argument("--seconds", type=float, default=3.0, help="concurrent run length")
    parser.add_argument("--committers", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-groups-kv-") as tmp:
        server = RedisServer(Path(tmp) / "redis")
        server.start()
        try:
            result = asyncio.run(run(args, server.url))
        finally:
            server.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
