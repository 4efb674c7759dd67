"""SC and SPU child processes for integration tests and tools, each stopped by its pid.

``ScChild`` runs ``python -m sc`` (waits for its ready file), ``SpuChild`` runs
``python -m spu`` (waits for its ``SPU_READY`` line) and ``ProcessCluster`` puts an SC
and N custom SPUs together on loopback against a given Redis: it registers the SPUs
with fixed free ports, starts them, waits until the SC sees them online, and offers the
moves tests make: SIGKILL an SPU, start it again on the same ports and data directory,
create a topic and wait for its leaders, open a client connection to an SPU.

Children are ordinary (not detached) processes of the caller, started and stopped the
one way every server process is (``spark_stream.supervision``): every wait is bounded,
a process that exits during start fails with the tail of its log, and ``close()`` kills
whatever still runs, by pid, so a failing test leaves nothing behind. Waits block;
async callers run them in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

from spark_stream.client.admin import AdminClient
from spark_stream.errors import FluvioError, ServerStartError
from spark_stream.local.redis_server import free_port
from spark_stream.models import Partition
from spark_stream.net.connection import Connection
from spark_stream.supervision import (
    PidRecord,
    log_tail,
    log_text,
    reap,
    spawn,
    spu_environment,
    terminate,
)

__all__ = ["ChildProcess", "ScChild", "SpuChild", "ProcessCluster", "HOST", "REPO"]

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[2]
"""The checkout the children import ``sc`` and ``spu`` from (first on their path)."""
_POLL = 0.05


def _python_env() -> dict[str, str]:
    """``PYTHONPATH`` for a ``python -m`` child: this checkout first."""
    rest = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([str(REPO), rest] if rest else [str(REPO)])}


class ChildProcess:
    """One child process with its output in a log file.

    Args:
        name: used in errors.
        argv: the command.
        log_path: stdout and stderr go here (appended, so restarts keep history).
        env: variables added to this process's environment.
        wrapper: a command prefix that execs ``argv`` (e.g. ``ip netns exec NS``: the
            pid stays the server's, so stopping by pid still works).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        wrapper: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.wrapper = list(wrapper)
        self.log_path = log_path
        self.env = dict(env or {})
        self.record: PidRecord | None = None
        self.returncode: int | None = None
        self._log_start = 0

    @property
    def pid(self) -> int | None:
        """The pid while the process runs."""
        return self.record.pid if self.record is not None and self.alive else None

    @property
    def alive(self) -> bool:
        """True while the process runs (once it ended, its exit code is in ``returncode``)."""
        if self.record is None:
            return False
        if self.record.alive():
            return True
        self.returncode = reap(self.record.pid, wait_s=5.0)  # its last threads may be ending
        self.record = None
        return False

    def spawn(self) -> None:
        """Start the process (no wait)."""
        if self.alive:
            raise ServerStartError(f"{self.name} is already running")
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.returncode = None
        self.record = spawn(
            [*self.wrapper, *self.argv], self.log_path, env=self.env, new_session=False
        )

    def log(self) -> str:
        """What the current run wrote to its log."""
        return log_text(self.log_path, self._log_start)

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the current run's log, formatted for an error message."""
        return log_tail(self.log_path, lines, offset=self._log_start)

    def wait_for(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``check()`` until true; fail if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while not check():
            if not self.alive:
                raise ServerStartError(
                    f"{self.name} exited ({self.returncode}) before {what}; log "
                    f"{self.log_path}:{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"{self.name}: no {what} within {timeout}s; log "
                    f"{self.log_path}:{self.log_tail()}"
                )
            time.sleep(_POLL)  # bounded poll of another process

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 10.0) -> int | None:
        """Send ``sig`` by pid and reap the process (SIGKILL if it outlives ``timeout``).

        Returns:
            Its exit code (negative: the signal that ended it), None if unknown.
        """
        if self.record is not None:
            self.returncode = terminate(self.record, timeout, name=self.name, sig=sig)
            self.record = None
        return self.returncode

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (a clean stop), SIGKILL after ``timeout``; the exit code as ``kill``."""
        return self.kill(signal.SIGTERM, timeout)


class ScChild(ChildProcess):
    """``python -m sc`` on loopback.

    Args:
        redis_url: the KV store.
        workdir: ready file, log and managed SPUs' data.
        heartbeat_timeout_s: the SC's SPU heartbeat timeout.
        ports: (public, private); 0 picks free ones (read them after ``start``).
        spu_command: argv template of managed SPUs (the SC's ``--spu-command``).
        metrics: serve Prometheus metrics on a free port (``metrics_url`` after start).
        host: the address both servers bind to.
        wrapper: command prefix, as ``ChildProcess``.
    """

    def __init__(
        self,
        redis_url: str,
        workdir: Path,
        *,
        heartbeat_timeout_s: float = 3.0,
        ports: tuple[int, int] = (0, 0),
        spu_command: Sequence[str] | None = None,
        metrics: bool = False,
        host: str = HOST,
        wrapper: Sequence[str] = (),
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.ready_path = workdir / "sc.ready.json"
        argv = [
            sys.executable, "-m", "sc", "--redis-url", redis_url, "--host", host,
            "--public-port", str(ports[0]), "--private-port", str(ports[1]),
            "--heartbeat-timeout", str(heartbeat_timeout_s),
            "--data-dir", str(workdir / "managed"), "--ready-file", str(self.ready_path),
        ]  # fmt: skip
        if spu_command:
            argv += ["--spu-command", shlex.join(spu_command)]
        if metrics:
            argv += ["--metrics-port", "0"]
        super().__init__("sc", argv, workdir / "sc.log", _python_env(), wrapper)
        self.public_port = 0
        self.private_port = 0
        self.metrics_url: str | None = None

    def start(self, timeout: float = 30.0) -> Self:
        """Start and wait until both servers listen."""
        self.ready_path.unlink(missing_ok=True)
        self.spawn()
        self.wait_for(self.ready_path.exists, timeout, "ready file")
        info = json.loads(self.ready_path.read_text())
        if info["pid"] != self.pid:
            raise ServerStartError(f"{self.ready_path} names pid {info['pid']}, not {self.pid}")
        self.public_port, self.private_port = int(info["public_port"]), int(info["private_port"])
        self.metrics_url = info.get("metrics_url")
        return self

    def pin_ports(self) -> None:
        """Make the next start bind the ports this run bound (SPUs know the old ones)."""
        for flag, port in (
            ("--public-port", self.public_port),
            ("--private-port", self.private_port),
        ):
            self.argv[self.argv.index(flag) + 1] = str(port)


class SpuChild(ChildProcess):
    """``python -m spu`` on loopback with fixed ports and data directory.

    Args:
        spu_id: the SPU id (registered in the SC beforehand for a custom SPU).
        sc_private_port: the SC's private port.
        workdir: the SPU's data directory; its log is ``workdir/spu.log``.
        ports: (public, private).
        settings: more ``SpuSettings`` fields, e.g. ``{"replica_max_lag_ms": 2000}``.
        host: the address both servers bind to.
        sc_host: the SC's address.
        wrapper: command prefix, as ``ChildProcess``.
    """

    def __init__(
        self,
        spu_id: int,
        sc_private_port: int,
        workdir: Path,
        ports: tuple[int, int],
        settings: dict[str, Any] | None = None,
        *,
        host: str = HOST,
        sc_host: str = HOST,
        wrapper: Sequence[str] = (),
    ) -> None:
        env = {
            **_python_env(),
            **spu_environment(
                spu_id,
                sc_endpoint=f"{sc_host}:{sc_private_port}",
                data_dir=workdir,
                ports=ports,
                host=host,
                settings=settings,
            ),
        }
        argv = [sys.executable, "-m", "spu"]
        super().__init__(f"spu-{spu_id}", argv, workdir / "spu.log", env, wrapper)
        self.spu_id = spu_id
        self.ports = ports
        self.workdir = workdir

    def start(self, timeout: float = 30.0) -> Self:
        """Start and wait until it printed its ready line (both servers listen)."""
        self.spawn()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait for the ``SPU_READY`` line of the current run."""
        self.wait_for(lambda: "SPU_READY" in self.log(), timeout, "SPU_READY line")


class ProcessCluster:
    """An SC and custom SPUs as child processes against the Redis at ``redis_url``.

    Args:
        redis_url: a running Redis (tests: the ``redis_url`` fixture).
        workdir: logs and data of every process go below it.
        spu_ids: the SPUs to register and run.
        heartbeat_timeout_s: the SC's SPU heartbeat timeout.
        spu_settings: ``SpuSettings`` fields for every SPU (``replica_max_lag_ms``...).
        sc_metrics: the SC serves Prometheus metrics (SPUs: ``metrics_port`` setting).
    """

    def __init__(
        self,
        redis_url: str,
        workdir: Path,
        spu_ids: Sequence[int],
        *,
        heartbeat_timeout_s: float = 3.0,
        spu_settings: dict[str, Any] | None = None,
        sc_metrics: bool = False,
    ) -> None:
        self.redis_url = redis_url
        self.workdir = workdir
        self.sc = ScChild(
            redis_url, workdir / "sc", heartbeat_timeout_s=heartbeat_timeout_s, metrics=sc_metrics
        )
        self.spu_ids = list(spu_ids)
        self.spu_settings = {"heartbeat_interval_s": 0.5, **(spu_settings or {})}
        self.spus: dict[int, SpuChild] = {}
        self.admin: AdminClient | None = None
        self._conns: list[Connection] = []

    async def start(self, timeout: float = 30.0) -> Self:  # noqa: ASYNC109
        """Start the SC, register and start the SPUs, wait until all are online."""
        await asyncio.to_thread(self.sc.start, timeout)
        self.admin = await AdminClient(HOST, self.sc.public_port, timeout=10).connect()
        for spu_id in self.spu_ids:
            ports = (free_port(), free_port())
            await self.admin.register_spu(
                spu_id,
                publicEndpoint={"port": ports[0], "ingress": [{"hostname": HOST}]},
                privateEndpoint={"port": ports[1], "host": HOST},
            )
            self.spus[spu_id] = SpuChild(
                spu_id,
                self.sc.private_port,
                self.workdir / f"spu-{spu_id}",
                ports,
                self.spu_settings,
            )
        for spu in self.spus.values():
            spu.spawn()  # all at once: their start-up overlaps
        for spu in self.spus.values():
            await asyncio.to_thread(spu.wait_ready, timeout)
        await self.wait_online(set(self.spu_ids), timeout)
        return self

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close client connections, then stop every process."""
        for conn in self._conns:
            await conn.close()
        self._conns.clear()
        if self.admin is not None:
            await self.admin.close()
            self.admin = None
        self.close()

    def close(self) -> None:
        """Stop every process by pid (SPUs first); safe to call again."""
        for spu in self.spus.values():
            spu.stop()
        self.sc.stop()

    # -- moves -----------------------------------------------------------------------

    async def restart_sc(self, sig: int = signal.SIGKILL, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Stop the SC with ``sig`` and start it again on the same ports and Redis."""
        if self.admin is not None:
            await self.admin.close()
            self.admin = None
        self.sc.kill(sig)
        self.sc.pin_ports()
        await asyncio.to_thread(self.sc.start, timeout)
        self.admin = await AdminClient(HOST, self.sc.public_port, timeout=10).connect()

    async def kill_spu(self, spu_id: int) -> None:
        """SIGKILL SPU ``spu_id`` (a crash) and reap it."""
        self.spus[spu_id].kill(signal.SIGKILL)

    async def start_spu(self, spu_id: int, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Start SPU ``spu_id`` again on its ports and data directory."""
        await asyncio.to_thread(self.spus[spu_id].start, timeout)

    async def connect(self, spu_id: int) -> Connection:
        """A client connection to SPU ``spu_id``'s public port (closed by ``aclose``)."""
        conn = await Connection.open(HOST, self.spus[spu_id].ports[0], name=f"spu-{spu_id}")
        self._conns.append(conn)
        return conn

    async def wait_online(self, ids: set[int], timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Wait until the SC lists exactly ``ids`` among the online SPUs."""
        admin = self._admin()
        deadline = time.monotonic() + timeout
        while True:
            online = {s.spu_id for s in await admin.list_spus() if s.status.is_online}
            if ids <= online:
                return
            if time.monotonic() > deadline:
                tails = "\n".join(
                    f"{s.name}:{s.log_tail(5)}"
                    for s in self.spus.values()
                    if s.spu_id in ids - online
                )
                raise ServerStartError(f"SPUs {sorted(ids - online)} not online:\n{tails}")
            await asyncio.sleep(_POLL)  # bounded poll of the SC's view

    async def create_topic(self, name: str, timeout: float = 30.0, **spec: Any) -> None:  # noqa: ASYNC109
        """Create a topic; wait until every partition is online and its leader reported."""
        admin = self._admin()
        await admin.create_topic(name, **spec)
        count = spec.get("partitions", 1)
        deadline = time.monotonic() + timeout
        while True:
            parts = await admin.list_partitions(name)
            if len(parts) == count and all(_led(p) for p in parts):
                return
            if time.monotonic() > deadline:
                raise ServerStartError(f"topic {name} not online: {[p.status for p in parts]}")
            await asyncio.sleep(_POLL)  # bounded poll of the SC's view

    async def leader_of(
        self,
        partition: str,
        *,
        not_in: set[int] | None = None,
        timeout: float = 30.0,  # noqa: ASYNC109
    ) -> int:
        """The partition's leader once online, reported, and not in ``not_in``."""
        admin = self._admin()
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(FluvioError):
                for part in await admin.list_partitions():
                    if part.name == partition and _led(part):
                        leader = part.status.leader
                        assert leader is not None
                        if leader not in (not_in or set()):
                            return leader
            if time.monotonic() > deadline:
                raise ServerStartError(f"no online leader of {partition} within {timeout}s")
            await asyncio.sleep(_POLL)  # bounded poll of the SC's view

    def _admin(self) -> AdminClient:
        if self.admin is None:
            raise ServerStartError("the cluster is not started")
        return self.admin


def _led(partition: Partition) -> bool:
    """Online with a leader that has reported (its LEO is known)."""
    status = partition.status
    return (
        status.resolution.value == "Online"
        and status.leader is not None
        and status.leo >= 0
        and any(r.spu_id == status.leader for r in status.lrs)
    )
