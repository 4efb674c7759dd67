"""One group member as its own process, driven by ``bench/groups.py``.

    python -m bench._group_member ENDPOINT TOPIC GROUP [--work-us 0]

It connects, prints ``{"ev": "ready"}`` and waits for ``join`` on stdin; then it reads
with ``AsyncGroupConsumer`` (earliest, auto-commit every second) and prints one JSON line
per event on stdout, each stamped with ``time.monotonic_ns()`` (CLOCK_MONOTONIC, shared
by every process of the host, so the driver compares them with its own clock):

- ``assigned``: the member's partitions changed (``parts``);
- ``fetch``: the first batch of partition ``p`` handed out since it (re)entered the
  assignment, i.e. the moment this member fetched a newly granted partition;
- ``rows``: the rows handed out so far (``n``), every 100 ms.

``--work-us`` simulates I/O-bound processing: after each batch the member sleeps that
many microseconds per row. ``leave`` on stdin closes the member gracefully (commit,
release, ``GROUP_LEAVE``) and prints ``left``; end of stdin does the same. A SIGKILL is
the driver's other way to end it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from typing import Any

from spark_stream.client import AsyncGroupConsumer, FluvioAsync

_TICK_S = 0.1


def emit(ev: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"ev": ev, "t": time.monotonic_ns(), **fields}) + "\n")
    sys.stdout.flush()


class Reader:
    """Reads the member's batches and reports assignment changes and first fetches."""

    def __init__(self, member: AsyncGroupConsumer, work_us: float) -> None:
        self.member = member
        self.work_s = work_us / 1e6
        self.rows = 0
        self.reported: list[int] = []
        self.held: set[int] = set()  # fetched since it (re)entered the assignment

    def check_assignment(self) -> set[int]:
        parts = sorted(p for _, p in self.member.assignment())
        if parts != self.reported:
            self.reported = parts
            emit("assigned", parts=parts)
        self.held &= set(parts)
        return set(parts)

    async def read(self) -> None:
        async with contextlib.aclosing(self.member.stream_batches()) as batches:
            async for batch in batches:
                p = int(batch.column("partition")[0].as_py())
                assigned = self.check_assignment()
                if p in assigned and p not in self.held:
                    self.held.add(p)
                    emit("fetch", p=p)
                self.rows += batch.num_rows
                if self.work_s:
                    await asyncio.sleep(self.work_s * batch.num_rows)  # the simulated I/O

    async def tick(self) -> None:
        while True:
            self.check_assignment()
            emit("rows", n=self.rows)
            await asyncio.sleep(_TICK_S)


async def _stdin_lines() -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def run(args: argparse.Namespace) -> None:
    stdin = await _stdin_lines()
    async with await FluvioAsync.connect(args.endpoint, timeout=30) as client:
        emit("ready")
        if (await stdin.readline()).strip() != b"join":
            return
        member = await client.group_consumer(
            args.topic, group=args.group, auto_offset_reset="earliest"
        )
        reader = Reader(member, args.work_us)
        tasks = [asyncio.create_task(reader.read()), asyncio.create_task(reader.tick())]
        waiter = asyncio.create_task(stdin.readline())  # "leave" or end of stdin
        done, _ = await asyncio.wait([waiter, tasks[0]], return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if tasks[0] in done and tasks[0].exception() is not None:
            emit("error", message=repr(tasks[0].exception()))
        await member.close()
        emit("left", rows=reader.rows)
        waiter.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("endpoint")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("--work-us", type=float, default=0.0, help="simulated I/O per row")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
