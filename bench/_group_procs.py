"""Member processes (``bench/_group_member.py``) as the driver sees them.

Each ``MemberProc`` runs one member process with pipes: commands go to its stdin
(``join``, ``leave``), and a reader task folds the JSON lines it prints into state: the
partitions it holds, every first fetch of a newly granted partition, and its row count
over time. All times are ``time.monotonic_ns()`` of the host (shared by the processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

__all__ = ["MemberProc", "settled"]

_WAIT_S = 60.0
_ROOT = str(Path(__file__).resolve().parent.parent)  # the member imports bench.*
_spawned = 0


class MemberProc:
    """One member process. ``spawn``, then ``join``; ``kill`` or ``leave`` to end it."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log
        self.ready = asyncio.Event()
        self.left = asyncio.Event()
        self.parts: set[int] = set()
        self.fetched: set[int] = set()  # fetched since last granted
        self.fetches: list[tuple[int, int]] = []  # (partition, t_ns)
        self.rows: list[tuple[int, int]] = []  # (t_ns, rows so far)
        self.changed = asyncio.Event()  # set on every line read
        self.error: str | None = None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def spawn(
        cls, endpoint: str, topic: str, group: str, logs: Path, work_us: float = 0.0
    ) -> MemberProc:
        """Start a member process (it connects, then waits for ``join``)."""
        global _spawned
        _spawned += 1
        log = logs / f"member-{_spawned}.log"
        with open(log, "wb") as err:  # noqa: ASYNC230 - a local file, once per process
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bench._group_member",
                endpoint,
                topic,
                group,
                "--work-us",
                str(work_us),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
                env={**os.environ, "PYTHONPATH": _ROOT},
            )
        return cls(proc, log)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            event: dict[str, Any] = json.loads(line)
            match event["ev"]:
                case "ready":
                    self.ready.set()
                case "assigned":
                    self.parts = set(event["parts"])
                    self.fetched &= self.parts
                case "fetch":
                    self.fetched.add(event["p"])
                    self.fetches.append((event["p"], event["t"]))
                case "rows":
                    self.rows.append((event["t"], event["n"]))
                case "error":
                    self.error = event["message"]
                case "left":
                    self.left.set()
            self.changed.set()
        self.changed.set()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")

    async def join(self) -> None:
        """Join the group once the process is connected."""
        await self.wait_ready()
        self._send("join")

    async def wait_ready(self) -> None:
        await self._wait(self.ready, "connect")

    def leave(self) -> None:
        """Ask for a graceful leave (commit, release, ``GROUP_LEAVE``)."""
        self._send("leave")

    def kill(self) -> None:
        """SIGKILL the process."""
        os.kill(self.proc.pid, signal.SIGKILL)

    async def wait_left(self) -> None:
        await self._wait(self.left, "leave")

    async def _wait(self, event: asyncio.Event, what: str) -> None:
        try:
            async with asyncio.timeout(_WAIT_S):
                await event.wait()
        except TimeoutError:
            raise RuntimeError(f"member {self.pid} did not {what}; see {self.log}") from None

    def rate(self, start_ns: int, end_ns: int) -> float:
        """Rows/s handed out between two instants, from the reports inside them."""
        inside = [(t, n) for t, n in self.rows if start_ns <= t <= end_ns]
        if len(inside) < 2 or inside[-1][0] == inside[0][0]:
            return 0.0
        (t0, n0), (t1, n1) = inside[0], inside[-1]
        return (n1 - n0) / ((t1 - t0) / 1e9)

    async def stop(self) -> None:
        """End the process (SIGKILL if it still runs) and its reader."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        await self.proc.wait()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


def settled(members: list[MemberProc], partitions: int) -> bool:
    """Every partition held by exactly one member, loads within 1, each fetched."""
    owned = [m.parts for m in members]
    loads = [len(o) for o in owned]
    return (
        sum(loads) == partitions
        and len(set().union(*owned)) == partitions
        and max(loads) - min(loads) <= 1
        and all(m.parts == m.fetched for m in members)
    )


async def wait_until(members: list[MemberProc], cond: Any, what: str) -> None:
    """Wait (bounded) until ``cond()`` holds, re-checking after each member's report."""
    try:
        async with asyncio.timeout(_WAIT_S):
            while not cond():
                waits = [asyncio.ensure_future(m.changed.wait()) for m in members]
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for w in waits:
                    w.cancel()
                for m in members:
                    m.changed.clear()
    except TimeoutError:
        logs = ", ".join(str(m.log) for m in members)
        raise RuntimeError(f"timed out waiting for {what}; member logs: {logs}") from None
