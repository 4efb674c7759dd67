"""A local cluster on one machine: Redis, the SC and N SPUs as detached processes.

Theory of operation. Everything lives under one data directory::

    {data_dir}/cluster.json     ports and SPU layout, reused by every later start
    {data_dir}/pids/*.pid       "pid create_time" of redis, sc and custom SPUs
    {data_dir}/logs/*.log       one log per process
    {data_dir}/redis/           Redis AOF (the cluster's desired state)
    {data_dir}/spus/spu-{id}/   SPU replica data; managed SPUs' spu.pid and spu.log too

``start`` is idempotent: each process whose pid file names a live process (same pid
*and* start time, so a recycled pid never counts) is kept, anything missing is
started, and every wait is bounded with an error that quotes the process's log tail.
Processes run in their own session, so they outlive the CLI that started them; pid
files, spawn, stop and the managed SPUs' files (written by the SC's provisioner, read
here) are ``spark_stream.supervision``'s. SPUs
come from an SPU group (``spu_mode="group"``: the SC's local-process provisioner runs
them, as in the product) or are spawned here and registered as custom SPUs
(``spu_mode="custom"``: tests that kill and restart SPUs on their own schedule).
``stop`` sends SIGTERM (SIGKILL after a timeout) by pid, SC first so it stops its
managed SPUs, and keeps the data. The client profile is written after a start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis

from spark_stream.client.admin import AdminClient
from spark_stream.client.profile import Profile, save_profile
from spark_stream.errors import FluvioError, InvalidConfigError, ServerStartError
from spark_stream.local.redis_server import find_redis_server, free_port, redis_argv
from spark_stream.models import Spu
from spark_stream.net.endpoint import Endpoint
from spark_stream.supervision import (
    ManagedSpuDirs,
    PidRecord,
    log_tail,
    running,
    spawn,
    spu_environment,
    terminate,
    write_pid_file,
)

__all__ = [
    "DEFAULT_DATA_DIR",
    "FIRST_SPU_ID",
    "GROUP_NAME",
    "ClusterLayout",
    "ProcessStatus",
    "ClusterStatus",
    "LocalCluster",
    "process_alive",
]

DEFAULT_DATA_DIR = Path.home() / ".fluvio"
FIRST_SPU_ID = 5001
GROUP_NAME = "main"
_HOST = "127.0.0.1"


def process_alive(pid_file: Path) -> int | None:
    """The pid recorded in ``pid_file`` if that very process still runs (not a zombie)."""
    record = running(pid_file)
    return record.pid if record is not None else None


def _spawn(
    argv: Sequence[str], pid_file: Path, log_file: Path, env: Mapping[str, str] | None = None
) -> PidRecord:
    """Start a detached process (own session) and record it in ``pid_file``."""
    try:
        record = spawn(argv, log_file, env=env)
    except OSError as exc:
        raise ServerStartError(f"cannot run {argv[0]!r}: {exc}") from exc
    write_pid_file(pid_file, record)
    return record


def _stop_pid(pid_file: Path, timeout: float, name: str) -> bool:
    """SIGTERM the recorded process, SIGKILL after ``timeout``; True if one was running."""
    record = running(pid_file)
    if record is not None:
        terminate(record, timeout, name=name)
    pid_file.unlink(missing_ok=True)
    return record is not None


# -- state -------------------------------------------------------------------------------


@dataclass
class ClusterLayout:
    """What a local cluster is made of; saved as ``cluster.json`` and reused on restart."""

    redis_port: int = 0
    redis_url: str = ""
    sc_public_port: int = 0
    sc_private_port: int = 0
    spu_mode: str = "group"
    spus: int = 1
    spu_ports: dict[str, list[int]] = field(default_factory=dict)

    @property
    def spu_ids(self) -> list[int]:
        """The SPU ids of the cluster: ``5001 .. 5000 + spus``."""
        return list(range(FIRST_SPU_ID, FIRST_SPU_ID + self.spus))


@dataclass(frozen=True, slots=True)
class ProcessStatus:
    """One process of the cluster."""

    name: str
    pid: int | None
    running: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """What ``status`` reports: every process, and every SPU as the SC sees it."""

    data_dir: str
    endpoint: str
    processes: list[ProcessStatus]
    spus: list[dict[str, Any]]

    @property
    def running(self) -> bool:
        """True when Redis and the SC run."""
        names = {p.name: p.running for p in self.processes}
        return names.get("sc", False) and names.get("redis", True)

    def to_dict(self) -> dict[str, Any]:
        """A JSON/YAML-friendly view."""
        return {
            "data_dir": self.data_dir,
            "endpoint": self.endpoint,
            "running": self.running,
            "processes": [asdict(p) for p in self.processes],
            "spus": self.spus,
        }


class LocalCluster:
    """Start, stop and inspect a local cluster under ``data_dir``.

    Args:
        data_dir: where everything lives (default ``~/.fluvio``).
        spus: number of SPUs (only raised on a later start, never lowered).
        sc_port: the SC's public port on first start (0: any free port).
        redis_url: use this Redis instead of starting one.
        spu_mode: ``group`` (SC-provisioned SPU group) or ``custom`` (spawned here).
        start_timeout: bound on each wait of ``start``.
        stop_timeout: seconds between SIGTERM and SIGKILL.
        python: the interpreter that runs the SC and SPUs.
        profile: where ``start`` writes the client profile (default ``profile_path()``).
        env: variables added to the environment of every process the cluster starts
            (e.g. ``FLUVIO_SPU_*`` settings); SPUs an SPU group provisions inherit the SC's.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        spus: int = 1,
        sc_port: int = 9003,
        redis_url: str | None = None,
        spu_mode: str = "group",
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        python: str = sys.executable,
        profile: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if spu_mode not in ("group", "custom"):
            raise InvalidConfigError(f"spu_mode: must be group or custom, got {spu_mode!r}")
        if spus < 0:
            raise InvalidConfigError(f"spus: must be >= 0, got {spus}")
        self.data_dir = Path(data_dir or DEFAULT_DATA_DIR).expanduser().resolve()
        self._want_spus = spus
        self._sc_port = sc_port
        self._redis_url = redis_url
        self._spu_mode = spu_mode
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.python = python
        self.profile = Path(profile) if profile is not None else None
        self.env = dict(env or {})
        self.layout = self._load_layout()
        self._spu_dirs = ManagedSpuDirs(self.data_dir / "spus")

    # -- paths ---------------------------------------------------------------------------

    def pid_file(self, name: str) -> Path:
        """The pid file of process ``name`` (``redis``, ``sc``, ``spu-5001``)."""
        return self.data_dir / "pids" / f"{name}.pid"

    def log_file(self, name: str) -> Path:
        """The log file of process ``name``."""
        return self.data_dir / "logs" / f"{name}.log"

    def spu_dir(self, spu_id: int) -> Path:
        """The data dir of SPU ``spu_id`` (the provisioner's layout for managed SPUs)."""
        return self._spu_dirs.spu_dir(spu_id)

    def spu_pid_file(self, spu_id: int) -> Path:
        """The pid file of SPU ``spu_id``: the provisioner's for a group, ours for custom."""
        if self.layout.spu_mode == "group":
            return self._spu_dirs.pid_file(spu_id)  # written by the SC's provisioner
        return self.pid_file(f"spu-{spu_id}")

    @property
    def endpoint(self) -> str:
        """The SC's public ``host:port``."""
        return f"{_HOST}:{self.layout.sc_public_port}"

    def _layout_path(self) -> Path:
        return self.data_dir / "cluster.json"

    def _load_layout(self) -> ClusterLayout:
        try:
            data = json.loads(self._layout_path().read_text())
            return ClusterLayout(**data)
        except FileNotFoundError:
            return ClusterLayout(spu_mode=self._spu_mode, spus=self._want_spus)
        except (OSError, ValueError, TypeError) as exc:
            raise InvalidConfigError(f"{self._layout_path()} is unreadable: {exc}") from exc

    def _save_layout(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._layout_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self.layout), indent=2) + "\n")
        tmp.replace(self._layout_path())

    # -- start ---------------------------------------------------------------------------

    def start(self) -> ClusterStatus:
        """Start whatever is not running (idempotent) and write the client profile.

        Raises:
            ServerStartError: a process failed to start or answer in time (with its log).
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.layout.spus = max(self.layout.spus, self._want_spus)
        self._start_redis()
        self._start_sc()
        self._save_layout()
        asyncio.run(self._start_spus())
        self._save_layout()
        save_profile(Profile(endpoint=self.endpoint, data_dir=str(self.data_dir)), self.profile)
        return self.status()

    def _start_redis(self) -> None:
        if self._redis_url:
            self.layout.redis_url = self._redis_url
        if self.layout.redis_url and not self.layout.redis_port:
            return  # external Redis: not ours to start
        pid_file = self.pid_file("redis")
        if running(pid_file) is not None and self._redis_ok():
            return
        port = self.layout.redis_port or free_port()
        if not self._port_free(port):
            port = free_port()
        folder = self.data_dir / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        log_file = self.log_file("redis")
        argv = redis_argv(find_redis_server(), port, folder, log_file)
        _spawn(argv, pid_file, log_file, self.env)
        self.layout.redis_port = port
        self.layout.redis_url = f"redis://{_HOST}:{port}/0"
        self._wait(lambda: self._redis_ok(), "redis", pid_file)

    def _redis_ok(self) -> bool:
        try:
            client = redis.Redis.from_url(
                self.layout.redis_url, socket_timeout=0.5, socket_connect_timeout=0.5
            )
            try:
                return bool(client.ping())
            finally:
                client.close()
        except (redis.RedisError, OSError):
            return False

    @staticmethod
    def _port_free(port: int) -> bool:
        import socket

        with socket.socket() as sock:
            # As the servers bind: connections of a previous run in TIME_WAIT do not count.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((_HOST, port))
            except OSError:
                return False
        return True

    def _start_sc(self) -> None:
        pid_file = self.pid_file("sc")
        if running(pid_file) is not None and self.layout.sc_public_port:
            return
        ready = self.data_dir / "sc.ready"
        ready.unlink(missing_ok=True)
        public = self.layout.sc_public_port or self._sc_port
        private = self.layout.sc_private_port or 0
        if public and not self._port_free(public):
            raise ServerStartError(
                f"port {public} for the SC is taken (another cluster?); use --sc-port"
            )
        if private and not self._port_free(private):
            private = 0
        spu_command = f"{self.python} -m spu"
        argv = [
            self.python, "-m", "sc", "--redis-url", self.layout.redis_url, "--host", _HOST,
            "--public-port", str(public), "--private-port", str(private),
            "--data-dir", str(self._spu_dirs.root), "--spu-command", spu_command,
            "--ready-file", str(ready),
        ]  # fmt: skip
        _spawn(argv, pid_file, self.log_file("sc"), self.env)
        self._wait(ready.is_file, "sc", pid_file)
        info = json.loads(ready.read_text())
        self.layout.sc_public_port = int(info["public_port"])
        self.layout.sc_private_port = int(info["private_port"])

    def _wait(self, check: Callable[[], bool], name: str, pid_file: Path) -> None:
        log_file = self.log_file(name)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if check():
                return
            if running(pid_file) is None:
                raise ServerStartError(
                    f"{name} exited during start; log {log_file}:{log_tail(log_file)}"
                )
            time.sleep(0.05)  # bounded poll of a condition in another process
        raise ServerStartError(
            f"{name} did not become ready within {self.start_timeout}s; log "
            f"{log_file}:{log_tail(log_file)}"
        )

    async def _start_spus(self) -> None:
        async with AdminClient(_HOST, self.layout.sc_public_port, timeout=10.0) as admin:
            if self.layout.spu_mode == "group":
                await self._ensure_group(admin)
            else:
                for spu_id in self.layout.spu_ids:
                    await self._ensure_custom(admin, spu_id)
            await self._wait_spus_online(admin)

    async def _ensure_group(self, admin: AdminClient) -> None:
        if not self.layout.spus:
            return
        groups = {g.name: g for g in await admin.list_spu_groups()}
        group = groups.get(GROUP_NAME)
        if group is None:
            await admin.create_spu_group(GROUP_NAME, replicas=self.layout.spus, minId=FIRST_SPU_ID)
        elif group.spec.replicas < self.layout.spus:
            await admin.scale_spu_group(GROUP_NAME, self.layout.spus)

    async def _ensure_custom(self, admin: AdminClient, spu_id: int) -> None:
        ports = self.layout.spu_ports.get(str(spu_id))
        if ports is None:
            ports = [free_port(), free_port()]
            self.layout.spu_ports[str(spu_id)] = ports
        known = {s.spu_id for s in await admin.list_spus()}
        if spu_id not in known:
            await admin.register_spu(
                spu_id,
                publicEndpoint={"port": ports[0], "ingress": [{"hostname": _HOST}]},
                privateEndpoint={"port": ports[1], "host": _HOST},
            )
        if running(self.pid_file(f"spu-{spu_id}")) is None:
            self._spawn_spu(spu_id)

    def _spawn_spu(self, spu_id: int) -> PidRecord:
        """Start custom SPU ``spu_id`` with its recorded ports."""
        ports = self.layout.spu_ports[str(spu_id)]
        folder = self.spu_dir(spu_id)
        folder.mkdir(parents=True, exist_ok=True)
        env = {
            **self.env,
            **spu_environment(
                spu_id,
                sc_endpoint=str(Endpoint(_HOST, self.layout.sc_private_port)),
                data_dir=folder,
                ports=(ports[0], ports[1]),
                host=_HOST,
            ),
        }
        name = f"spu-{spu_id}"
        return _spawn([self.python, "-m", "spu"], self.pid_file(name), self.log_file(name), env)

    async def _wait_spus_online(self, admin: AdminClient) -> None:
        wanted = set(self.layout.spu_ids)
        deadline = time.monotonic() + self.start_timeout
        online: set[int] = set()
        while time.monotonic() < deadline:
            spus = await admin.list_spus()
            online = {s.spu_id for s in spus if s.status.is_online}
            if wanted <= online:
                return
            await asyncio.sleep(0.1)  # bounded poll of the SC's view
        missing = sorted(wanted - online)
        logs = "".join(f"\n{self._spu_log(i)}:{log_tail(self._spu_log(i), 8)}" for i in missing)
        raise ServerStartError(f"SPUs {missing} not online within {self.start_timeout}s{logs}")

    def _spu_log(self, spu_id: int) -> Path:
        if self.layout.spu_mode == "group":
            return self._spu_dirs.log_file(spu_id)
        return self.log_file(f"spu-{spu_id}")

    def spu_pid(self, spu_id: int) -> int | None:
        """The pid of SPU ``spu_id`` if it runs."""
        return process_alive(self.spu_pid_file(spu_id))

    # -- stop and status -----------------------------------------------------------------

    def stop(self) -> list[str]:
        """Stop every process (SC first, then SPUs, then Redis); keep the data.

        Returns:
            The names of the processes that were running.
        """
        files = [("sc", self.pid_file("sc"))]
        files += [(f"spu-{i}", self.spu_pid_file(i)) for i in self._known_spu_ids()]
        files.append(("redis", self.pid_file("redis")))
        stopped = []
        for name, pid_file in files:
            if _stop_pid(pid_file, self.stop_timeout, name):
                stopped.append(name)
        (self.data_dir / "sc.ready").unlink(missing_ok=True)
        return stopped

    def _known_spu_ids(self) -> list[int]:
        ids = set(self.layout.spu_ids) | {int(k) for k in self.layout.spu_ports}
        return sorted(ids | set(self._spu_dirs.spu_ids()))

    def status(self) -> ClusterStatus:
        """Every process and, when the SC answers, every SPU."""
        procs = []
        if self.layout.redis_port:
            pid = process_alive(self.pid_file("redis"))
            procs.append(ProcessStatus("redis", pid, pid is not None, self.layout.redis_url))
        pid = process_alive(self.pid_file("sc"))
        procs.append(ProcessStatus("sc", pid, pid is not None, self.endpoint))
        for spu_id in self._known_spu_ids():
            spu_pid = self.spu_pid(spu_id)
            procs.append(ProcessStatus(f"spu-{spu_id}", spu_pid, spu_pid is not None))
        spus: list[dict[str, Any]] = []
        if pid is not None:
            with contextlib.suppress(FluvioError, OSError):
                spus = asyncio.run(self._list_spus())
        return ClusterStatus(str(self.data_dir), self.endpoint, procs, spus)

    async def _list_spus(self) -> list[dict[str, Any]]:
        async with AdminClient(_HOST, self.layout.sc_public_port, timeout=5.0) as admin:
            return [_spu_row(s) for s in await admin.list_spus()]


def _spu_row(spu: Spu) -> dict[str, Any]:
    """One SPU as ``status`` lists it."""
    public = spu.spec.public_endpoint
    return {
        "id": spu.spu_id,
        "name": spu.name,
        "type": spu.spec.spu_type.value,
        "public": str(Endpoint(public.host, public.port)),
        "status": spu.status.resolution.value,
    }
