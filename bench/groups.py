"""Consumer-group benchmark: reassignment times, data-path overhead, scaling, SC load.

Starts a local cluster (Redis, SC, 3 SPUs as processes; topics of 6 partitions, RF 3) in
a temporary directory and measures, in one run (issue 11, brief section 5):

- ``one_member_ratio``: a one-member group's bulk read rate of a topic (from the
  beginning to its end, join included) over a plain consumer's of the same data, best of
  ``--rounds`` each, alternating;
- ``scaling_ratio_by_members``: for N = 1, 2, 3, 6 member processes (a fresh group each)
  with simulated I/O of ``--work-us`` per row slept after each batch, the aggregate
  rows/s over a window once every partition is fetched, divided by N x one member's;
- ``kill_reassign_*``: 3 member processes read while records are produced to every
  partition; one is SIGKILLed; the time from the signal to the last of its partitions
  being fetched by a survivor (each member reports its first batch of a newly granted
  partition with CLOCK_MONOTONIC); a warm spare then joins and the group settles again,
  ``--kills`` times;
- ``leave_reassign_*``: the same with a graceful leave (the command written to the
  member's stdin starts the clock), ``--kills`` times;
- ``heartbeat_rtt_*``: ``--members`` raw members (no data path) in groups of 10 on one
  SC heartbeating every second; round trips over a window of steady load, which starts
  ``--settle`` seconds after the last member joined. The join storm keeps the SC busy
  until about then, and the heartbeats it delayed come back together once a second for
  a while; ``heartbeat_rtt_p99_ms_after_join`` is the p99 of that settling window;
- ``commits_per_s``: ``--committers`` of those members holding grants commit their own
  partition in a loop (each commit one partition, all accepted), heartbeats going on.

Progress goes to stderr; the last line is one JSON object. ``--quick`` is a smoke run.

    ./dev bench groups [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pyarrow as pa

from bench._group_control import ControlPlane, p99
from bench._group_procs import MemberProc, settled, wait_until
from bench._records import make_batches
from spark_stream.client import FluvioAsync, Offset
from spark_stream.local.cluster import LocalCluster
from spark_stream.supervision import read_pid_file

PARTITIONS = 6
GOALS = {
    "kill_reassign_p99_ms": ("<=", 1000),
    "leave_reassign_p99_ms": ("<=", 500),
    "one_member_ratio": (">=", 0.95),
    "min_scaling_ratio": (">=", 0.9),
    "commits_per_s": (">=", 5000),
    "heartbeat_rtt_p99_ms": ("<=", 5),
}


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(samples, q)), 1)


async def make_topic(client: FluvioAsync, name: str) -> None:
    await client.admin().create_topic(name, partitions=PARTITIONS, replication_factor=3)
    async with asyncio.timeout(60):
        while True:
            infos = await client.topic_partitions(name)
            if len(infos) == PARTITIONS and all(
                i.leader is not None and i.resolution == "Online" for i in infos
            ):
                return
            await asyncio.sleep(0.05)  # bounded wait for the partitions to come online


async def fill(
    client: FluvioAsync, topic: str, per_partition: int, value_size: int, batch: int = 0
) -> int:
    """``per_partition`` records into every partition, in batches of ``batch`` rows (0:
    1,000 to 10,000)."""
    producer = await client.topic_producer(
        topic, batch_size=4 << 20, linger_ms=1, acks="all", max_in_flight=3
    )
    sizes = {"low": batch, "high": batch} if batch else {}
    batches = make_batches(per_partition, value_size, **sizes)
    futures = [
        await producer.send_batch(b, partition=p) for p in range(PARTITIONS) for b in batches
    ]
    await producer.flush()
    for future in futures:
        future.result()
    await producer.close()
    return per_partition * PARTITIONS


# -- data path: one member against a plain consumer --------------------------------------


class Read:
    """One bulk read: rows, seconds from the start (join included), and the milliseconds
    to its first batch (setup: leader lookups, for a group also the join, the committed
    offsets and the gates reaching the leaders)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.cpu = time.process_time()
        self.rows = 0
        self.first_ms = 0.0
        self.seconds = 0.0

    async def drain(self, batches: AsyncGenerator[pa.RecordBatch, None]) -> Read:
        async with contextlib.aclosing(batches):
            async for batch in batches:
                if not self.rows:
                    self.first_ms = (time.perf_counter() - self.start) * 1000
                self.rows += batch.num_rows
        self.seconds = time.perf_counter() - self.start
        self.cpu = time.process_time() - self.cpu  # this process's CPU seconds for the read
        return self


async def plain_read(client: FluvioAsync, topic: str) -> Read:
    read = Read()
    consumer = await client.consumer(topic)
    return await read.drain(consumer.stream_batches(Offset.beginning(), stop_at_end=True))


async def group_read(client: FluvioAsync, topic: str) -> Read:
    read = Read()
    member = await client.group_consumer(
        topic, group=f"bulk-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest"
    )
    try:
        return await read.drain(member.stream_batches(stop_at_end=True))
    finally:
        await member.close()


async def one_member_ratio(
    client: FluvioAsync, topic: str, total: int, rounds: int
) -> dict[str, Any]:
    """Best rate of each over ``rounds`` alternating reads (the best filters out the
    other work of a shared machine)."""
    reads: dict[str, list[Read]] = {"plain": [], "group": []}
    for _ in range(rounds):
        reads["plain"].append(await plain_read(client, topic))
        reads["group"].append(await group_read(client, topic))
    for kind, done in reads.items():
        if any(r.rows != total for r in done):
            raise RuntimeError(f"a {kind} read got {[r.rows for r in done]} rows of {total}")
        rates = [round(r.rows / r.seconds) for r in done]
        firsts = [round(r.first_ms, 1) for r in done]
        cpu = [round(r.cpu, 2) for r in done]
        progress(f"bulk {kind}: rows/s {rates}, first batch after {firsts} ms, cpu s {cpu}")
    best = {k: max(r.rows / r.seconds for r in done) for k, done in reads.items()}
    median = {k: statistics.median(r.rows / r.seconds for r in done) for k, done in reads.items()}
    return {
        "plain_read_rps": round(best["plain"]),
        "group_read_rps": round(best["group"]),
        "one_member_ratio": round(best["group"] / best["plain"], 3),
        "one_member_ratio_of_medians": round(median["group"] / median["plain"], 3),
        "plain_first_batch_ms": round(statistics.median(r.first_ms for r in reads["plain"]), 1),
        "group_first_batch_ms": round(statistics.median(r.first_ms for r in reads["group"]), 1),
        # Reader CPU of a group read over a plain one: the data path's own overhead.
        "group_over_plain_reader_cpu": round(
            statistics.median(r.cpu for r in reads["group"])
            / statistics.median(r.cpu for r in reads["plain"]),
            3,
        ),
    }


# -- scaling with I/O-bound members -------------------------------------------------------


async def scaling(
    endpoint: str, topic: str, logs: Path, work_us: float, window: float
) -> dict[str, Any]:
    rates: dict[int, float] = {}
    for n in (1, 2, 3, 6):
        group = f"scale-{n}-{uuid.uuid4().hex[:8]}"
        members = [await MemberProc.spawn(endpoint, topic, group, logs, work_us) for _ in range(n)]
        try:
            for m in members:
                await m.join()
            await wait_until(members, lambda ms=members: settled(ms, PARTITIONS), f"{n} settled")
            await asyncio.sleep(0.3)  # past the first batches' burst
            start = time.monotonic_ns()
            await asyncio.sleep(window)
            end = time.monotonic_ns()
            rates[n] = sum(m.rate(start, end) for m in members)
            progress(f"{n} member(s): {rates[n]:,.0f} rows/s")
        finally:
            for m in members:
                await m.stop()
    one = rates[1]
    ratios = {str(n): round(r / (n * one), 3) for n, r in rates.items()}
    return {
        "one_member_io_rps": round(one),
        "scaling_ratio_by_members": ratios,
        "min_scaling_ratio": min(ratios.values()),
    }


# -- reassignment after a kill or a leave ---------------------------------------------------


async def produce_forever(client: FluvioAsync, topic: str, stop: asyncio.Event) -> None:
    """A few records into every partition every 10 ms, so a fetch always finds data."""
    producer = await client.topic_producer(topic, linger_ms=2, acks="leader")
    table = pa.table({"value": [b"x" * 100] * 5})
    while not stop.is_set():
        for p in range(PARTITIONS):
            await producer.send_batch(table, partition=p)
        await asyncio.sleep(0.01)
    await producer.close()


def reassigned_ns(survivors: list[MemberProc], parts: set[int], since: int) -> int | None:
    """When the last of ``parts`` was first fetched by a survivor after ``since``."""
    firsts = []
    for p in parts:
        times = [t for m in survivors for q, t in m.fetches if q == p and t > since]
        if not times:
            return None
        firsts.append(min(times))
    return max(firsts)


async def reassignment(
    client: FluvioAsync, endpoint: str, topic: str, logs: Path, kills: int
) -> dict[str, Any]:
    group = f"live-{uuid.uuid4().hex[:8]}"
    stop = asyncio.Event()
    producer = asyncio.get_running_loop().create_task(produce_forever(client, topic, stop))
    members = [await MemberProc.spawn(endpoint, topic, group, logs) for _ in range(3)]
    spare = await MemberProc.spawn(endpoint, topic, group, logs)
    gone: list[MemberProc] = []
    results: dict[str, list[float]] = {"kill": [], "leave": []}
    try:
        for m in members:
            await m.join()
        await wait_until(members, lambda: settled(members, PARTITIONS), "3 members settled")
        for i in range(2 * kills):
            how = "kill" if i < kills else "leave"
            victim = members[i % 3]
            survivors = [m for m in members if m is not victim]
            parts = set(victim.parts)
            t0 = time.monotonic_ns()
            if how == "kill":
                victim.kill()
            else:
                victim.leave()
            await wait_until(
                survivors,
                lambda s=survivors, p=parts, t=t0: reassigned_ns(s, p, t) is not None,
                f"survivors fetching after a {how}",
            )
            took = reassigned_ns(survivors, parts, t0)
            assert took is not None
            results[how].append((took - t0) / 1e6)
            progress(f"{how} {i % kills + 1}/{kills}: {results[how][-1]:.1f} ms")
            if how == "leave":
                await victim.wait_left()
            await victim.stop()
            gone.append(victim)
            members[i % 3] = spare
            await spare.join()
            spare = await MemberProc.spawn(endpoint, topic, group, logs)
            await wait_until(members, lambda: settled(members, PARTITIONS), "a settled group")
    finally:
        stop.set()
        for m in [*members, spare]:
            await m.stop()
        await producer
    kill, leave = results["kill"], results["leave"]
    return {
        "kills": kills,
        "kill_reassign_p50_ms": round(statistics.median(kill), 1),
        "kill_reassign_p99_ms": _ms(kill, 99),
        "kill_reassign_max_ms": round(max(kill), 1),
        "leave_reassign_p50_ms": round(statistics.median(leave), 1),
        "leave_reassign_p99_ms": _ms(leave, 99),
        "leave_reassign_max_ms": round(max(leave), 1),
    }


# -- the SC control plane ------------------------------------------------------------------------


def _cpu_s(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


async def control_plane(
    port: int,
    sc: psutil.Process,
    topic: str,
    members: int,
    committers: int,
    seconds: float,
    settle: float,
) -> dict[str, Any]:
    """Heartbeat RTTs, then commits/s; the SC's CPU seconds per request show what a full
    core would allow, whatever share of the shared machine the SC got."""
    plane = ControlPlane(port, topic, PARTITIONS, members, groups=max(1, members // 10))
    try:
        start = time.perf_counter()
        await plane.join(limit_s=300)
        progress(f"{members} members joined and settled in {time.perf_counter() - start:.1f} s")
        after_join, _, _ = await plane.heartbeats(settle)
        cpu = _cpu_s(sc)
        rtts, errors, lags = await plane.heartbeats(seconds)
        beat_us = (_cpu_s(sc) - cpu) / max(1, len(rtts)) * 1e6
        progress(f"heartbeats: {len(rtts)} in {seconds} s, p99 {p99(rtts)} ms, {errors} failed")
        cpu = _cpu_s(sc)
        rate, during = await plane.commits(committers, seconds)
        commit_us = (_cpu_s(sc) - cpu) / seconds - len(during) / seconds * beat_us / 1e6
        commit_us = commit_us / rate * 1e6
        progress(f"{committers} committers: {rate:,.0f} commits/s, heartbeat p99 {p99(during)} ms")
    finally:
        await plane.close()
    return {
        "sc_cpu_us_per_heartbeat": round(beat_us),
        "sc_cpu_us_per_commit": round(commit_us),
        "members": members,
        "heartbeats": len(rtts),
        "heartbeat_errors": errors,
        "heartbeat_rtt_p50_ms": round(statistics.median(rtts), 3),
        "heartbeat_rtt_p99_ms": p99(rtts),
        "heartbeat_rtt_p99_ms_after_join": p99(after_join),
        "bench_loop_lag_p99_ms": p99(lags),
        "committers": committers,
        "commits_per_s": round(rate),
        "heartbeat_rtt_p99_ms_while_committing": p99(during),
    }


# -- the run -----------------------------------------------------------------------------------


async def measure(cluster: LocalCluster, args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    endpoint = cluster.endpoint
    phases = set(args.phases.split(","))
    results: dict[str, Any] = {}
    async with await FluvioAsync.connect(endpoint, timeout=30) as client:
        for topic in ("bulk", "scale", "live", "ctl"):
            await make_topic(client, topic)
        if "bulk" in phases:
            total = await fill(client, "bulk", args.bulk_records // PARTITIONS, 100)
            progress(f"bulk: {total:,} records of 100 B produced")
            results.update(await one_member_ratio(client, "bulk", total, args.rounds))
        if "scale" in phases:
            per_member = 1e6 / args.work_us
            needed = int(per_member * (args.window + 10) / PARTITIONS * 1.5) + 10_000
            await fill(client, "scale", needed, 16, batch=args.batch)
            results.update(await scaling(endpoint, "scale", logs, args.work_us, args.window))
        if "live" in phases:
            results.update(await reassignment(client, endpoint, "live", logs, args.kills))
    if "ctl" in phases:
        port = int(endpoint.rsplit(":", 1)[1])
        record = read_pid_file(cluster.pid_file("sc"))
        assert record is not None, "the SC has no pid file"
        sc = psutil.Process(record.pid)
        results.update(
            await control_plane(
                port, sc, "ctl", args.members, args.committers, args.window, args.settle
            )
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small, fast smoke run")
    parser.add_argument("--bulk-records", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=7, help="bulk reads of each kind")
    parser.add_argument("--work-us", type=float, default=50.0, help="simulated I/O per row")
    parser.add_argument("--window", type=float, default=4.0, help="seconds per measurement")
    parser.add_argument("--kills", type=int, default=20, help="kills (and as many leaves)")
    parser.add_argument("--members", type=int, default=1000, help="heartbeating members")
    parser.add_argument("--committers", type=int, default=64)
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds after the joins before heartbeats count"
    )
    parser.add_argument("--batch", type=int, default=500, help="rows per batch (scaling)")
    parser.add_argument("--phases", default="bulk,scale,live,ctl", help="what to measure")
    args = parser.parse_args()
    if args.quick:
        args.bulk_records, args.rounds, args.window = 300_000, 1, 1.0
        args.kills, args.members, args.committers, args.settle = 2, 50, 16, 1.0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # a socket per member
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.members)), hard))
    with tempfile.TemporaryDirectory(prefix="bench-groups-") as tmp:
        cluster = LocalCluster(
            Path(tmp) / "cluster",
            spus=3,
            sc_port=0,
            spu_mode="custom",
            profile=Path(tmp) / "profile.json",
            start_timeout=60,
        )
        try:
            cluster.start()
            progress(f"cluster up at {cluster.endpoint}")
            logs = Path(tmp) / "members"
            logs.mkdir()
            load = os.getloadavg()[0]
            results = asyncio.run(measure(cluster, args, logs))
            # Other work on the machine shows in every figure: the load before and after.
            results["loadavg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        finally:
            cluster.stop()
    for key, (op, goal) in GOALS.items():
        if key not in results:
            continue
        value = results[key]
        met = value <= goal if op == "<=" else value >= goal
        progress(f"{key:28s} {value}  goal {op} {goal}: {'met' if met else 'MISSED'}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
