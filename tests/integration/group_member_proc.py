"""A group member in its own process, for the failure suite: it can be SIGKILLed or
SIGSTOPped by pid, and what it did survives it.

``python -m tests.integration.group_member_proc ENDPOINT TOPIC GROUP OUT`` joins
``GROUP`` with the client's ``AsyncGroupConsumer`` (``earliest``; auto-commit every
``--commit-ms``, 0: off; a commit after every ``--commit-every`` batches) and appends
one JSON line per event to ``OUT``, flushed at once (a killed process loses at most a
partial last line, which ``read_events`` skips):

- ``{"ev": "start", "member": id, "pid": pid}`` once joined;
- ``{"ev": "assignment", "generation": g, "parts": [p, ...]}`` whenever the member's
  partitions or generation change (assigned and revoked are the differences);
- ``{"ev": "batch", "p": p, "offsets": [...]}`` for every batch handed out, written
  *before* it is committed;
- ``{"ev": "commit", "positions": {p: offset}}`` after a commit of the positions returned
  (by default after every batch, so the uncommitted window is one batch);
- ``{"ev": "wake-commit", "generation": g, "parts": [...], "error": repr or None}`` with
  ``--commit-on-wake``: on SIGCONT it commits what it had handed out (a woken zombie's
  commit; ``generation`` and ``parts`` as the member saw them when it started);
- ``{"ev": "log", "msg": ...}`` for the group consumer's log lines (fencing, rejoining);
- ``{"ev": "error", "msg": ...}`` if reading failed, ``{"ev": "closed"}`` after a
  graceful close (SIGTERM: commit, release, leave).

``MemberProc`` starts one and reads its file back.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from spark_stream.client import AsyncGroupConsumer
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.errors import FluvioError

__all__ = ["MemberProc", "Output", "members", "read_events"]

T = TypeVar("T")
_ROOT = Path(__file__).resolve().parents[2]


class _Events:
    """Appends JSON lines, each flushed as written."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def write(self, **event: Any) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()


class _LogToEvents(logging.Handler):
    def __init__(self, events: _Events) -> None:
        super().__init__(logging.DEBUG)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        self.events.write(ev="log", level=record.levelname, msg=record.getMessage())


async def aenumerate(items: AsyncIterator[T]) -> AsyncIterator[tuple[int, T]]:
    n = 0
    async for item in items:
        yield n, item
        n += 1


def _watch(member: AsyncGroupConsumer, events: _Events, seen: list[Any]) -> None:
    now = [member.generation, [p for _, p in member.assignment()]]
    if now != seen:
        seen[:] = now
        events.write(ev="assignment", generation=now[0], parts=now[1])


async def _member(
    endpoint: str,
    topic: str,
    group: str,
    events: _Events,
    commit_ms: int,
    commit_every: int,
    commit_on_wake_: bool,
) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    client = await FluvioAsync.connect(endpoint)
    member = await client.group_consumer(
        topic,
        group=group,
        auto_offset_reset="earliest",
        enable_auto_commit=commit_ms > 0,
        auto_commit_interval_ms=max(commit_ms, 1),
    )
    events.write(ev="start", member=member.member_id, pid=os.getpid())
    seen: list[Any] = []
    handed: dict[int, int] = {}  # partition -> the offset after the last record handed out

    async def commit_on_wake() -> None:
        """After SIGCONT: commit what it handed out, as the member it was before the stop
        (``generation`` says whether it had already joined again when this ran)."""
        offsets = {(topic, p): o for p, o in handed.items()}
        generation, parts = member.generation, [p for _, p in member.assignment()]
        try:
            await member.commit(offsets)
            error = None
        except FluvioError as exc:
            error = repr(exc)
        events.write(ev="wake-commit", generation=generation, parts=parts, error=error)

    if commit_on_wake_:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGCONT, lambda: loop.create_task(commit_on_wake()))

    async def watch() -> None:
        while True:
            _watch(member, events, seen)
            await asyncio.sleep(0.02)  # how often assignment changes are looked for

    async def read() -> None:
        async with contextlib.aclosing(member.stream_batches()) as batches:
            async for n, batch in aenumerate(batches):
                _watch(member, events, seen)  # a new grant's event precedes its batches
                (p,) = set(batch.column("partition").to_pylist())
                offsets = batch.column("offset").to_pylist()
                events.write(ev="batch", p=p, offsets=offsets)
                handed[p] = offsets[-1] + 1
                if commit_every == 0 or (n + 1) % commit_every:
                    continue
                await member.commit()
                positions = {tp[1]: member.position(tp) for tp in member.assignment()}
                events.write(ev="commit", positions=positions)
                _watch(member, events, seen)

    watcher = asyncio.create_task(watch())
    reader = asyncio.create_task(read())
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([reader, stopping], return_when=asyncio.FIRST_COMPLETED)
        if reader.done() and reader.exception() is not None:
            events.write(ev="error", msg=repr(reader.exception()))
    finally:
        for task in (watcher, reader, stopping):
            task.cancel()
        await asyncio.gather(watcher, reader, stopping, return_exceptions=True)
        await member.close()
        await client.close()
    events.write(ev="closed")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("endpoint")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("out", type=Path)
    parser.add_argument("--commit-ms", type=int, default=200, help="auto-commit (0: off)")
    parser.add_argument(
        "--commit-every", type=int, default=1, help="commit every N batches (0: auto-commit only)"
    )
    parser.add_argument(
        "--commit-on-wake", action="store_true", help="on SIGCONT, commit what was handed out"
    )
    args = parser.parse_args(argv)
    with args.out.open("a", encoding="utf-8") as out:
        events = _Events(out)
        logger = logging.getLogger("spark_stream.client.consumer.group")
        logger.setLevel(logging.INFO)
        logger.addHandler(_LogToEvents(events))
        asyncio.run(
            _member(
                args.endpoint,
                args.topic,
                args.group,
                events,
                args.commit_ms,
                args.commit_every,
                args.commit_on_wake,
            )
        )


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of an output file (a partial last line is skipped)."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            events.append(json.loads(line))
    return events


@dataclass
class Output:
    """What one member process wrote, parsed."""

    events: list[dict[str, Any]]
    member: str | None = None
    records: list[tuple[int, int]] = field(default_factory=list)  # (partition, offset)
    committed: dict[int, int] = field(default_factory=dict)  # last commit per partition

    @classmethod
    def of(cls, events: list[dict[str, Any]]) -> Output:
        out = cls(events)
        for ev in events:
            if ev["ev"] == "start":
                out.member = ev["member"]
            elif ev["ev"] == "batch":
                out.records.extend((ev["p"], o) for o in ev["offsets"])
            elif ev["ev"] == "commit":
                out.committed.update({int(p): o for p, o in ev["positions"].items()})
        return out

    def parts(self) -> list[int]:
        """The partitions of the last assignment event."""
        found = [ev["parts"] for ev in self.events if ev["ev"] == "assignment"]
        return found[-1] if found else []

    def logs(self) -> list[str]:
        return [ev["msg"] for ev in self.events if ev["ev"] == "log"]

    def errors(self) -> list[str]:
        return [ev["msg"] for ev in self.events if ev["ev"] == "error"]


class MemberProc:
    """One ``group_member_proc`` child; stopped (SIGKILL, by pid) by ``kill``/``close``."""

    def __init__(self, endpoint: str, topic: str, group: str, out: Path, *args: str) -> None:
        self.out = out
        env = {**os.environ, "PYTHONPATH": str(_ROOT)}
        argv = [sys.executable, "-m", "tests.integration.group_member_proc"]
        with out.with_suffix(".stderr").open("w") as stderr:  # the child keeps its copy
            self.proc = subprocess.Popen(
                [*argv, endpoint, topic, group, str(out), *args],
                env=env,
                cwd=_ROOT,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> Output:
        return Output.of(read_events(self.out))

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL and reap (a crash)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process must run to die
            self.proc.kill()
        self.proc.wait(10)

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM: the member commits, leaves and exits; its exit code."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


@contextlib.contextmanager
def members(
    endpoint: str,
    topic: str,
    group: str,
    folder: Path,
    n: int,
    *args: str,
    every: tuple[str, ...] = (),
) -> Iterator[list[MemberProc]]:
    """``n`` member processes writing to ``folder/m{i}.jsonl`` (``args``: options of the
    first one; ``every``: of all); all killed on exit."""
    folder.mkdir(parents=True, exist_ok=True)
    procs: list[MemberProc] = []
    try:
        for i in range(n):
            extra = (*every, *args) if i == 0 else every
            procs.append(MemberProc(endpoint, topic, group, folder / f"m{i}.jsonl", *extra))
        yield procs
    finally:
        for proc in procs:
            proc.kill()


if __name__ == "__main__":
    main()
