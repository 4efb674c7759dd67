"""A local cluster on one machine: Redis, the SC and N SPUs as detached processes.

Theory of operation. Everything lives under one data directory::

    {data_dir}/cluster.json     ports and SPU layout, reused by every later start
    {data_dir}/pids/*.pid       "pid create_time" of redis, sc and custom SPUs
    {data_dir}/logs/*.log       one log per process
    {data_dir}/redis/           Redis AOF (the cluster's desired state), auth.conf (0600)
    {data_dir}/redis.password   the Redis password (0600), given to the SC as a file
    {data_dir}/spus/spu-{id}/   SPU replica data, its secret (spu.secret, 0600); managed
                                SPUs' spu.pid and spu.log too
    {data_dir}/tier/{topic}/    every topic's default tier (shared by the SPUs)
    {data_dir}/tls/             the cluster's CA and certificates (``tls="tls"|"mtls"``)
    {data_dir}/auth/cluster.key the key signing client tokens (only with ``auth``)

``start`` is idempotent: each process whose pid file names a live process (same pid
*and* start time, so a recycled pid never counts) is kept, anything missing is
started, and every wait is bounded with an error that names the component and quotes
its log tail. A start that fails stops what it started (and only that: processes it
kept stay), so a failure leaves the cluster as it found it. Options a later start
cannot honour (fewer SPUs, another SC port, SPU mode or Redis) are errors, not ignored.
Processes run in their own session, so they outlive the CLI that started them; pid
files, spawn, stop and the managed SPUs' files (written by the SC's provisioner, read
here) are ``spark_stream.supervision``'s. SPUs
come from an SPU group (``spu_mode="group"``: the SC's local-process provisioner runs
them, as in the product) or are spawned here and registered as custom SPUs
(``spu_mode="custom"``: tests that kill and restart SPUs on their own schedule).
With ``standby_scs`` (``fluvio cluster start --standby-scs N``) N more SCs run against
the same Redis (``sc-standby-{n}``, ports fixed at first start); the first SC to hold the
lease is active, and every SPU and the client profile get every SC's address, so they
follow whichever is active (``sc.leadership``).
``stop`` sends SIGTERM (SIGKILL after a timeout) by pid, standby SCs first, then the SC
so it stops its managed SPUs, and keeps the data. The client profile is written after a start.
``status`` reports only what exists: nothing for a data directory never started, and
the SPUs of the cluster's current state (the SC's view when it answers).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from spark_stream.auth import (
    CLUSTER,
    Claims,
    Grant,
    Permission,
    load_key,
    new_key,
    sign,
    write_key,
)
from spark_stream.client.admin import AdminClient
from spark_stream.client.profile import Profile, delete_profile, load_profiles, save_profile
from spark_stream.errors import (
    FluvioError,
    InvalidConfigError,
    NotFoundError,
    ServerStartError,
    SpuExistsError,
)
from spark_stream.local._state import (
    FIRST_SPU_ID,
    TLS_MODES,
    ClusterLayout,
    ClusterStatus,
    ProcessStatus,
    option_conflicts,
)
from spark_stream.local.certs import LocalCerts, ensure_local_certs
from spark_stream.local.redis_server import (
    check_appendfsync,
    find_redis_server,
    free_port,
    redis_argv,
    redis_problem,
    write_auth_config,
)
from spark_stream.models import Spu
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import ScEndpoints
from spark_stream.net.tls import TlsConfig
from spark_stream.spu_identity import (
    SECRET_FILE,
    new_secret,
    read_secret_file,
    write_secret_file,
)
from spark_stream.supervision import (
    ManagedSpuDirs,
    PidRecord,
    log_tail,
    log_text,
    read_pid_file,
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
    "option_conflicts",
    "process_alive",
]

DEFAULT_DATA_DIR = Path.home() / ".fluvio"
DEFAULT_SC_PORT = 9003
PORT_RELEASE_S = 5.0
"""How long a start waits for the SC port of a process that just died to be released."""
GROUP_NAME = "main"
_HOST = "127.0.0.1"
# A log line of our servers: "date time LEVEL logger message".
_ERROR_LINE = re.compile(r"^\S+ \S+ ERROR \S+ (?P<message>.+)$", re.MULTILINE)


def process_alive(pid_file: Path) -> int | None:
    """The pid recorded in ``pid_file`` if that very process still runs (not a zombie)."""
    record = running(pid_file)
    return record.pid if record is not None else None


@dataclass(frozen=True, slots=True)
class _Started:
    """A process this start spawned: stopped again if the start fails."""

    name: str
    label: str
    pid_file: Path
    record: PidRecord
    log_offset: int


def _exit_reason(log_file: Path, offset: int, name: str) -> str:
    """The last ERROR our server logged since ``offset`` (its own "x failed to start: "
    prefix dropped), else "it exited"."""
    errors = _ERROR_LINE.findall(log_text(log_file, offset))
    if not errors:
        return "it exited"
    message: str = errors[-1].strip()
    prefix = f"{name} failed to start: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def _stop_pid(pid_file: Path, timeout: float, name: str) -> bool:
    """SIGTERM the recorded process, SIGKILL after ``timeout``; True if one was running."""
    record = running(pid_file)
    if record is not None:
        terminate(record, timeout, name=name)
    pid_file.unlink(missing_ok=True)
    return record is not None


class LocalCluster:
    """Start, stop and inspect a local cluster under ``data_dir``.

    Options left None take the cluster's recorded values (on a first start: 1 SPU, port
    9003, an embedded Redis, ``group``); a later start refuses values it cannot honour
    (``option_conflicts``).

    Args:
        data_dir: where everything lives (default ``~/.fluvio``).
        spus: number of SPUs (a later start may raise it, never lower it).
        sc_port: the SC's public port on first start (0: any free port).
        redis_url: use this Redis instead of starting one (first start only).
        redis_fsync: ``appendfsync`` of the Redis it starts (``always``, ``everysec``,
            ``no``); its append-only file is always on.
        spu_mode: ``group`` (SC-provisioned SPU group) or ``custom`` (spawned here).
        start_timeout: bound on each wait of ``start``.
        stop_timeout: seconds between SIGTERM and SIGKILL.
        python: the interpreter that runs the SC and SPUs.
        profile: where ``start`` writes the client profile (default ``profile_path()``).
        env: variables added to the environment of every process the cluster starts
            (e.g. ``FLUVIO_SPU_*`` settings); SPUs an SPU group provisions inherit the SC's.
        metrics: the SC and SPUs serve Prometheus metrics, each on a free loopback port
            (``status`` lists the URLs); once on, later starts keep it on.
        default_tier: topics created without a tier get ``{data_dir}/tier/{topic}``
            (``tier_root``); False leaves them untiered (the SC is started without a tier
            root; a running SC keeps the setting it was started with).
        standby_scs: standby SCs to run beside the SC (a later start may only add).
        tls: on first start, ``tls`` makes every port (SC and SPU, public and private)
            speak TLS with certificates of a CA made for the cluster (``certs``);
            ``mtls`` also demands client certificates (SPUs present theirs to the SC and
            to their leaders); ``off`` (default) is plaintext. The profile written
            after a start tells clients which CA (and client certificate) to use.
        auth: clients need a token: the SC and SPUs check tokens signed with the key in
            ``auth_key_file`` (made on the first start with it), and the profile gets an
            admin token (``*=admin``); once on, later starts keep it on. Off by default.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        spus: int | None = None,
        sc_port: int | None = None,
        redis_url: str | None = None,
        redis_fsync: str = "everysec",
        spu_mode: str | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        python: str = sys.executable,
        profile: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        metrics: bool = False,
        default_tier: bool = True,
        standby_scs: int | None = None,
        tls: str | None = None,
        auth: bool = False,
    ) -> None:
        if standby_scs is not None and standby_scs < 0:
            raise InvalidConfigError(f"standby_scs: must be >= 0, got {standby_scs}")
        if spu_mode not in (None, "group", "custom"):
            raise InvalidConfigError(f"spu_mode: must be group or custom, got {spu_mode!r}")
        if tls not in (None, *TLS_MODES):
            raise InvalidConfigError(f"tls: must be one of {', '.join(TLS_MODES)}, got {tls!r}")
        if spus is not None and spus < 0:
            raise InvalidConfigError(f"spus: must be >= 0, got {spus}")
        self.data_dir = Path(data_dir or DEFAULT_DATA_DIR).expanduser().resolve()
        self._want_spus = spus
        self._sc_port = sc_port
        self._redis_url = redis_url
        self._redis_fsync = check_appendfsync(redis_fsync)
        self._spu_mode = spu_mode
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.python = python
        self.profile = Path(profile) if profile is not None else None
        self.env = dict(env or {})
        self.default_tier = default_tier
        self._tls = tls
        self._existing = self._layout_path().is_file()
        self.layout = self._load_layout()
        if not self._existing and tls is not None:
            self.layout.tls = tls
        self.layout.metrics = self.layout.metrics or metrics
        self.layout.auth = self.layout.auth or auth
        self._admin_token: str | None = None
        self._spu_dirs = ManagedSpuDirs(self.data_dir / "spus")
        self._started: list[_Started] = []
        self._want_standbys = standby_scs or 0
        self._before: dict[int, tuple[int | None, int]] = {}

    # -- paths ---------------------------------------------------------------------------

    def pid_file(self, name: str) -> Path:
        """The pid file of process ``name`` (``redis``, ``sc``, ``spu-5001``)."""
        return self.data_dir / "pids" / f"{name}.pid"

    @property
    def tier_root(self) -> Path:
        """The default tier of the cluster's topics: ``{data_dir}/tier/{topic}``."""
        return self.data_dir / "tier"

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
    def auth_key_file(self) -> Path:
        """The cluster key signing client tokens (used when ``auth`` is on)."""
        return self.data_dir / "auth" / "cluster.key"

    @property
    def admin_token(self) -> str | None:
        """A cluster-admin token (``*=admin``) when auth is on, else None.

        Raises:
            InvalidConfigError: the key file is unreadable.
        """
        if not self.layout.auth:
            return None
        if self._admin_token is None:
            if not self.auth_key_file.is_file():
                write_key(self.auth_key_file, new_key())
            admin = Claims("admin", (Grant(CLUSTER, frozenset({Permission.ADMIN})),))
            self._admin_token = sign(admin, load_key(self.auth_key_file))
        return self._admin_token

    @property
    def endpoint(self) -> str:
        """The SC's public ``host:port``; with standby SCs, every SC's, comma separated."""
        ports = [self.layout.sc_public_port] + [p[0] for p in self.layout.standby_ports]
        return ",".join(f"{_HOST}:{port}" for port in ports)

    @property
    def sc_private_endpoints(self) -> str:
        """Every SC's private ``host:port``, comma separated (what SPUs are given)."""
        ports = [self.layout.sc_private_port] + [p[1] for p in self.layout.standby_ports]
        return ",".join(f"{_HOST}:{port}" for port in ports)

    @property
    def standby_names(self) -> list[str]:
        """The process names of the standby SCs (``sc-standby-1``...)."""
        return [f"sc-standby-{n}" for n in range(1, len(self.layout.standby_ports) + 1)]

    @property
    def certs(self) -> LocalCerts:
        """The cluster's TLS files (made by the first ``--tls`` start)."""
        return LocalCerts(self.data_dir / "tls")

    @property
    def client_tls(self) -> TlsConfig | None:
        """How clients connect (None: plaintext): the profile written by ``start`` has it."""
        if self.layout.tls == "off":
            return None
        return self.certs.client_config(mutual=self.layout.tls == "mtls")

    def _tls_env(self) -> dict[str, str]:
        """``FLUVIO_SC_TLS__*`` and ``FLUVIO_SPU_TLS__*``: every server's certificate,
        the CA, and whether client certificates are required (made now if missing)."""
        if self.layout.tls == "off":
            return {}
        certs = ensure_local_certs(self.certs.directory)
        server = certs.server_config(mutual=self.layout.tls == "mtls")
        env = {}
        for role in ("SC", "SPU"):
            for key, value in server.model_dump(exclude_defaults=True).items():
                env[f"FLUVIO_{role}_TLS__{key.upper()}"] = (
                    str(value).lower() if isinstance(value, bool) else str(value)
                )
        return env

    def _layout_path(self) -> Path:
        return self.data_dir / "cluster.json"

    def _load_layout(self) -> ClusterLayout:
        try:
            data = json.loads(self._layout_path().read_text())
            return ClusterLayout(**data)
        except FileNotFoundError:
            return ClusterLayout(
                spu_mode=self._spu_mode or "group",
                spus=1 if self._want_spus is None else self._want_spus,
            )
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

        A failure stops the processes this call started (not those it found running).

        Raises:
            InvalidConfigError: an option the existing cluster cannot honour.
            ServerStartError: a component failed to start or answer in time; the message
                names it and why, with its log.
        """
        if self._existing:
            problems = option_conflicts(
                self.layout,
                spus=self._want_spus,
                sc_port=self._sc_port,
                redis_url=self._redis_url,
                spu_mode=self._spu_mode,
                tls=self._tls,
            )
            if problems:
                raise InvalidConfigError(f"cluster in {self.data_dir}: " + "; ".join(problems))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._want_spus is not None:
            self.layout.spus = max(self.layout.spus, self._want_spus)
        while len(self.layout.standby_ports) < self._want_standbys:
            self.layout.standby_ports.append([free_port(), free_port()])
        self._started = []
        # Where each SPU's log and process stood before this start (see _spu_up).
        self._before = {
            i: (self.spu_pid(i), self._log_size(self._spu_log(i))) for i in self.layout.spu_ids
        }
        try:
            self._start_redis()
            self._start_sc()
            self._start_standbys()
            self._save_layout()
            asyncio.run(self._start_spus())
            self._save_layout()
        except BaseException:
            self._stop_started()
            raise
        self._started = []
        save_profile(
            Profile(
                endpoint=self.endpoint,
                data_dir=str(self.data_dir),
                tls=self.client_tls,
                token=self.admin_token or "",
            ),
            self.profile,
        )
        return self.status()

    def _spawn(
        self, name: str, label: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> _Started:
        """Start a detached process (own session), record it in its pid file and in the
        list of what this start started."""
        log_file = self.log_file(name)
        offset = log_file.stat().st_size if log_file.exists() else 0
        try:
            record = spawn(argv, log_file, env=env)
        except OSError as exc:
            raise ServerStartError(
                f"{label} failed to start: cannot run {argv[0]!r}: {exc}"
            ) from exc
        pid_file = self.pid_file(name)
        write_pid_file(pid_file, record)
        started = _Started(name, label, pid_file, record, offset)
        self._started.append(started)
        return started

    def _stop_started(self) -> None:
        """Stop what this start started, newest first (SPUs, SC, Redis)."""
        for started in reversed(self._started):
            terminate(started.record, self.stop_timeout, name=started.name)
            if read_pid_file(started.pid_file) == started.record:
                started.pid_file.unlink(missing_ok=True)
            if started.name.startswith("sc"):
                (self.data_dir / f"{started.name}.ready").unlink(missing_ok=True)
        self._started = []

    def _start_redis(self) -> None:
        if self._redis_url and not self._existing:
            self.layout.redis_url = self._redis_url
        url = self.layout.redis_url
        if url and not self.layout.redis_port:  # external Redis: not ours to start
            problem = redis_problem(url)
            if problem is not None:
                raise ServerStartError(f"Redis at {url} is unreachable: {problem}")
            return
        if running(self.pid_file("redis")) is not None and self._redis_ok():
            return
        if not self._redis_password_file.exists():
            write_secret_file(self._redis_password_file, new_secret())
        port = self.layout.redis_port or free_port()
        if not self._port_free(port):
            port = free_port()
        folder = self.data_dir / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        config = write_auth_config(folder, read_secret_file(self._redis_password_file))
        argv = redis_argv(
            find_redis_server(),
            port,
            folder,
            self.log_file("redis"),
            appendfsync=self._redis_fsync,
            config_file=config,
        )
        started = self._spawn("redis", "Redis", argv, self.env)
        self.layout.redis_port = port
        self.layout.redis_url = f"redis://{_HOST}:{port}/0"
        self._wait(self._redis_ok, started)

    @property
    def _redis_password_file(self) -> Path:
        return self.data_dir / "redis.password"

    def redis_password(self) -> str | None:
        """The password of the cluster's own Redis; None for an external one or none."""
        if not self.layout.redis_port or not self._redis_password_file.exists():
            return None
        return read_secret_file(self._redis_password_file)

    def _redis_ok(self) -> bool:
        problem = redis_problem(self.layout.redis_url, timeout=0.5, password=self.redis_password())
        return problem is None

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

    @classmethod
    def _port_freed(cls, port: int, within_s: float) -> bool:
        """Whether ``port`` is free, or becomes free within ``within_s`` (polled).

        A killed SC's main thread can be gone (the pid file then names no running
        process) while its other threads still end and hold its sockets open; a restart
        right after a crash waits that out instead of calling the port taken.
        """
        deadline = time.monotonic() + within_s
        while not cls._port_free(port):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)  # bounded by the deadline
        return True

    def _start_sc(self) -> None:
        if running(self.pid_file("sc")) is not None and self.layout.sc_public_port:
            return
        ready = self.data_dir / "sc.ready"
        ready.unlink(missing_ok=True)
        public = self.layout.sc_public_port or (
            DEFAULT_SC_PORT if self._sc_port is None else self._sc_port
        )
        # Chosen here rather than by binding 0: the kernel would pick from the ephemeral
        # range, where an outgoing connection can take the port once the SC has died,
        # and a restart on the recorded port would find it in use.
        public = public or free_port()
        private = self.layout.sc_private_port or free_port()
        if not self._port_freed(public, PORT_RELEASE_S):
            raise ServerStartError(
                f"SC failed to start: port {Endpoint(_HOST, public)} is in use "
                "(another cluster?); choose another with --sc-port"
            )
        if not self._port_free(private) and not self.layout.standby_ports:
            private = free_port()
        started = self._spawn_sc("sc", "SC", public, private)
        self._wait(ready.is_file, started)
        info = json.loads(ready.read_text())
        self.layout.sc_public_port = int(info["public_port"])
        self.layout.sc_private_port = int(info["private_port"])

    def _spawn_sc(self, name: str, label: str, public: int, private: int) -> _Started:
        """Start an SC process ``name`` (``sc`` or a standby) on the given ports."""
        spu_command = f"{self.python} -m spu"
        self.admin_token  # noqa: B018 - writes the key file before the SC reads it
        # Managed SPUs inherit the SC's environment (TLS and auth included).
        env = {**self.env, **self._metrics_env(), **self._tls_env(), **self._auth_env()}
        argv = [
            self.python, "-m", "sc", "--redis-url", self.layout.redis_url, "--host", _HOST,
            "--public-port", str(public), "--private-port", str(private),
            "--data-dir", str(self._spu_dirs.root), "--spu-command", spu_command,
            "--ready-file", str(self.data_dir / f"{name}.ready"),
        ]  # fmt: skip
        if self.layout.standby_ports:
            ports = [private] + [p[1] for p in self.layout.standby_ports]
            argv += ["--spu-sc-endpoints", ",".join(f"{_HOST}:{p}" for p in ports)]
        if self.redis_password() is not None:
            argv += ["--redis-password-file", str(self._redis_password_file)]
        if self.layout.metrics:
            argv += ["--metrics-port", "0"]
        if self.default_tier:
            argv += ["--tier-root", str(self.tier_root)]
        return self._spawn(name, label, argv, env)

    def _start_standbys(self) -> None:
        """Start each standby SC that is not running; they stand by (the SC is active)."""
        for name, (public, private) in zip(
            self.standby_names, self.layout.standby_ports, strict=True
        ):
            if running(self.pid_file(name)) is not None:
                continue
            ready = self.data_dir / f"{name}.ready"
            ready.unlink(missing_ok=True)
            started = self._spawn_sc(name, f"standby SC {name}", public, private)
            self._wait(ready.is_file, started)

    def _wait(self, check: Callable[[], bool], started: _Started) -> None:
        """Poll ``check`` until true; fail naming the component if it exits or times out."""
        log_file = self.log_file(started.name)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if check():
                return
            if not started.record.alive():
                reason = _exit_reason(log_file, started.log_offset, started.name)
                raise ServerStartError(
                    f"{started.label} failed to start: {reason}; log "
                    f"{log_file}:{log_tail(log_file, offset=started.log_offset)}"
                )
            time.sleep(0.05)  # bounded poll of a condition in another process
        raise ServerStartError(
            f"{started.label} failed to start: not ready within {self.start_timeout}s; log "
            f"{log_file}:{log_tail(log_file, offset=started.log_offset)}"
        )

    async def _start_spus(self) -> None:
        scs = ScEndpoints.parse(self.endpoint)
        async with AdminClient(
            endpoints=scs, timeout=10.0, tls=self.client_tls, token=self.admin_token
        ) as admin:
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
        secret_file = self.spu_dir(spu_id) / SECRET_FILE
        if spu_id in known and not secret_file.exists():
            await admin.unregister_spu(spu_id)  # registered without a secret we hold
            known.discard(spu_id)
        if spu_id not in known:
            # The SPU's secret is made once and kept: a running SPU holds it, and an SC
            # rebuilding a lost store registered it with that one (sc.rebuild).
            if secret_file.exists():
                secret = read_secret_file(secret_file)
            else:
                secret = new_secret()
                write_secret_file(secret_file, secret)  # the SPU reads it (mode 0600)
            # An SC rebuilding a lost store registers a running SPU from its own report
            # (sc.rebuild), maybe between the listing and this call: that is the same SPU.
            with contextlib.suppress(SpuExistsError):
                await admin.register_spu(
                    spu_id,
                    secret=secret,
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
            **self._metrics_env(),
            **self._tls_env(),
            **self._auth_env(),
            **spu_environment(
                spu_id,
                sc_endpoint=self.sc_private_endpoints,
                data_dir=folder,
                ports=(ports[0], ports[1]),
                host=_HOST,
            ),
        }
        return self._spawn(f"spu-{spu_id}", f"SPU {spu_id}", [self.python, "-m", "spu"], env).record

    def _metrics_env(self) -> dict[str, str]:
        """SPU settings for metrics on a free port each (``FLUVIO_SPU_METRICS_PORT``)."""
        return {"FLUVIO_SPU_METRICS_PORT": "0"} if self.layout.metrics else {}

    def _auth_env(self) -> dict[str, str]:
        """The SC's and SPUs' ``auth_key_file`` setting when auth is on."""
        if not self.layout.auth:
            return {}
        key = str(self.auth_key_file)
        return {"FLUVIO_SC_AUTH_KEY_FILE": key, "FLUVIO_SPU_AUTH_KEY_FILE": key}

    def _metrics_url(self, name: str) -> str | None:
        """The metrics URL process ``name`` (``sc``, ``spu-5001``) wrote, if any."""
        try:
            if name == "sc":
                url = json.loads((self.data_dir / "sc.ready").read_text()).get("metrics_url")
            else:
                url = self._spu_dirs.metrics_file(int(name[4:])).read_text().strip()
        except (OSError, ValueError):
            return None
        return url if isinstance(url, str) and url else None

    async def _wait_spus_online(self, admin: AdminClient) -> None:
        """Wait until every SPU of the layout runs here *and* the SC lists it online.

        Both: an SC that just started lists SPUs as its store last knew them (online
        though their processes are gone), and a running process may not be accepted.
        """
        wanted = set(self.layout.spu_ids)
        deadline = time.monotonic() + self.start_timeout
        online: set[int] = set()
        alive: set[int] = set()
        while time.monotonic() < deadline:
            spus = await admin.list_spus()
            online = {s.spu_id for s in spus if s.status.is_online and self._spu_up(s.spu_id)}
            alive = {i for i in wanted if self.spu_pid(i) is not None}
            if wanted <= online & alive:
                return
            await asyncio.sleep(0.1)  # bounded poll of the SC's view
        missing = sorted(wanted - (online & alive))
        why = "; ".join(
            f"SPU {i}: " + ("no process running" if i not in alive else "not accepted by the SC")
            for i in missing
        )
        logs = "".join(f"\n{self._spu_log(i)}:{log_tail(self._spu_log(i), 8)}" for i in missing)
        raise ServerStartError(
            f"SPUs {missing} failed to start within {self.start_timeout}s ({why}){logs}"
        )

    def _spu_up(self, spu_id: int) -> bool:
        """Whether SPU ``spu_id`` connected to the SC since this start, when it had to.

        An SC this start started, or an SPU process that is not the one found running,
        means the SC's ``Online`` may be what its store last knew: the SPU's log must
        show it was accepted (``connected to the SC``) after this start began.
        """
        pid_before, offset = self._before.get(spu_id, (None, 0))
        sc_new = any(started.name == "sc" for started in self._started)
        if not sc_new and pid_before is not None and self.spu_pid(spu_id) == pid_before:
            return True
        return "connected to the SC" in log_text(self._spu_log(spu_id), offset)

    @staticmethod
    def _log_size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:
            return 0

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
        files = [(name, self.pid_file(name)) for name in self.standby_names]
        files.append(("sc", self.pid_file("sc")))
        files += [(f"spu-{i}", self.spu_pid_file(i)) for i in self._known_spu_ids()]
        files.append(("redis", self.pid_file("redis")))
        stopped = []
        for name, pid_file in files:
            if _stop_pid(pid_file, self.stop_timeout, name):
                stopped.append(name)
        for name in ["sc", *self.standby_names]:
            (self.data_dir / f"{name}.ready").unlink(missing_ok=True)
        return stopped

    def delete(self) -> tuple[list[str], list[Path]]:
        """Stop every process and remove the cluster's data (``cluster.json``, pids, logs,
        Redis, SPU data and logs), the client profiles naming this directory, and the
        directory too when nothing else is left in it.

        Only the cluster's own entries go (the layout at the top of this module), so a
        ``--data-dir`` that also holds other files, or ``~/.fluvio`` with the client
        profile, keeps them. An external Redis (``redis_url``) keeps its keys.

        Returns:
            The processes that were running, and the paths removed.

        Raises:
            NotFoundError: no cluster was ever started in ``data_dir``.
        """
        if not self.status().started:
            raise NotFoundError(f"no cluster in {self.data_dir}: nothing to delete")
        stopped = self.stop()
        removed = []
        ready = ["sc.ready", *(f"{name}.ready" for name in self.standby_names)]
        owned = ("cluster.json", "cluster.tmp", *ready, "pids", "logs", "redis", "spus", "tls")
        for name in (*owned, self._redis_password_file.name):
            path = self.data_dir / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
            else:
                continue
            removed.append(path)
        with contextlib.suppress(FluvioError):  # an unreadable profile file is not ours
            for name, profile in load_profiles(self.profile).profiles.items():
                if profile.data_dir == str(self.data_dir):
                    delete_profile(name, self.profile)
        with contextlib.suppress(OSError):  # not empty: other files stay
            self.data_dir.rmdir()
            removed.append(self.data_dir)
        return stopped, removed

    def _known_spu_ids(self) -> list[int]:
        """Every SPU id this data dir has heard of: layout, custom ports, SPU dirs."""
        ids = set(self.layout.spu_ids) | {int(k) for k in self.layout.spu_ports}
        return sorted(ids | set(self._spu_dirs.spu_ids()))

    def status(self) -> ClusterStatus:
        """Every process of the cluster as it is now and, when the SC answers, every SPU.

        SPU processes listed are those of the cluster's current state: the SC's SPUs
        when it answers (else the recorded layout's), plus any still running here; a
        deleted group's SPUs are gone. A data dir never started reports ``not started``.
        """
        redis_pid = process_alive(self.pid_file("redis"))
        sc_pid = process_alive(self.pid_file("sc"))
        known = self._known_spu_ids()
        spu_pids = {i: pid for i in known if (pid := self.spu_pid(i)) is not None}
        endpoint = self.endpoint if self.layout.sc_public_port else None
        if not (self._layout_path().is_file() or redis_pid or sc_pid or spu_pids):
            return ClusterStatus(str(self.data_dir), None, [], [], started=False)
        spus: list[dict[str, Any]] | None = None
        standbys = {name: process_alive(self.pid_file(name)) for name in self.standby_names}
        any_sc = sc_pid is not None or any(pid is not None for pid in standbys.values())
        if any_sc and endpoint is not None:
            try:
                spus = asyncio.run(self._list_spus())
            except (FluvioError, OSError):
                spus = None  # not answering: fall back to the recorded layout
        if spus is not None:
            ids = {s["id"] for s in spus} & set(known)
        else:
            ids = set(self.layout.spu_ids) | {int(k) for k in self.layout.spu_ports}
        procs = []
        if self.layout.redis_port or redis_pid is not None:
            procs.append(
                ProcessStatus("redis", redis_pid, redis_pid is not None, self.layout.redis_url)
            )
        sc_metrics = self._metrics_url("sc") if sc_pid is not None else None
        procs.append(ProcessStatus("sc", sc_pid, sc_pid is not None, endpoint or "", sc_metrics))
        for name, (public, _) in zip(self.standby_names, self.layout.standby_ports, strict=True):
            pid = standbys[name]
            procs.append(ProcessStatus(name, pid, pid is not None, f"{_HOST}:{public}"))
        for spu_id in sorted(ids | set(spu_pids)):
            pid = spu_pids.get(spu_id)
            name = f"spu-{spu_id}"
            url = self._metrics_url(name) if pid is not None else None
            procs.append(ProcessStatus(name, pid, pid is not None, metrics_url=url))
        return ClusterStatus(str(self.data_dir), endpoint, procs, spus or [])

    async def _list_spus(self) -> list[dict[str, Any]]:
        scs = ScEndpoints.parse(self.endpoint)
        async with AdminClient(
            endpoints=scs, timeout=5.0, tls=self.client_tls, token=self.admin_token
        ) as admin:
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
