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

The paths above and what the layout implies are ``cluster_files.ClusterFiles`` (this
class's base); spawning, bounded waits and a failed start's rollback are ``launcher``'s;
``status`` is ``status.read_status``. This module decides which processes run, and when.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path

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
from spark_stream.local.cluster_files import HOST, LAYOUT_FILE, ClusterFiles, load_layout
from spark_stream.local.launcher import (
    Launcher,
    Started,
    log_size,
    port_free,
    port_freed,
    stop_pid,
)
from spark_stream.local.redis_server import (
    check_appendfsync,
    find_redis_server,
    free_port,
    redis_argv,
    redis_problem,
    write_auth_config,
)
from spark_stream.local.status import read_status
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import ScEndpoints
from spark_stream.spu_identity import (
    SECRET_FILE,
    new_secret,
    read_secret_file,
    write_secret_file,
)
from spark_stream.supervision import PidRecord, log_tail, log_text, running, spu_environment

__all__ = [
    "DEFAULT_DATA_DIR",
    "FIRST_SPU_ID",
    "GROUP_NAME",
    "ClusterLayout",
    "ProcessStatus",
    "ClusterStatus",
    "LocalCluster",
    "option_conflicts",
]

DEFAULT_DATA_DIR = Path.home() / ".fluvio"
DEFAULT_SC_PORT = 9003
PORT_RELEASE_S = 5.0
"""How long a start waits for the SC port of a process that just died to be released."""
GROUP_NAME = "main"


class LocalCluster(ClusterFiles):
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
        resolved = Path(data_dir or DEFAULT_DATA_DIR).expanduser().resolve()
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
        default = ClusterLayout(spu_mode=spu_mode or "group", spus=1 if spus is None else spus)
        super().__init__(resolved, load_layout(resolved / LAYOUT_FILE, default))
        self._existing = self.layout_file.is_file()
        if not self._existing and tls is not None:
            self.layout.tls = tls
        self.layout.metrics = self.layout.metrics or metrics
        self.layout.auth = self.layout.auth or auth
        self._launcher = Launcher(self.pid_file, self.log_file)
        self._want_standbys = standby_scs or 0
        self._before: dict[int, tuple[int | None, int]] = {}

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
        self._launcher.clear()
        # Where each SPU's log and process stood before this start (see _spu_up).
        self._before = {
            i: (self.spu_pid(i), log_size(self.spu_log(i))) for i in self.layout.spu_ids
        }
        try:
            self._start_redis()
            self._start_sc()
            self._start_standbys()
            self.save_layout()
            asyncio.run(self._start_spus())
            self.save_layout()
        except BaseException:
            self._stop_started()
            raise
        self._launcher.clear()
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

    def _stop_started(self) -> None:
        """Stop what this start started, newest first (SPUs, SC, Redis)."""
        self._launcher.stop_started(self.stop_timeout, self._forget_ready)

    def _forget_ready(self, started: Started) -> None:
        """Remove the ready file of an SC that was stopped (a later start waits for it)."""
        if started.name.startswith("sc"):
            (self.data_dir / f"{started.name}.ready").unlink(missing_ok=True)

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
        if not self.redis_password_file.exists():
            write_secret_file(self.redis_password_file, new_secret())
        port = self.layout.redis_port or free_port()
        if not port_free(HOST, port):
            port = free_port()
        folder = self.data_dir / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        config = write_auth_config(folder, read_secret_file(self.redis_password_file))
        argv = redis_argv(
            find_redis_server(),
            port,
            folder,
            self.log_file("redis"),
            appendfsync=self._redis_fsync,
            config_file=config,
        )
        started = self._launcher.spawn("redis", "Redis", argv, self.env)
        self.layout.redis_port = port
        self.layout.redis_url = f"redis://{HOST}:{port}/0"
        self._launcher.wait(self._redis_ok, started, self.start_timeout)

    def _redis_ok(self) -> bool:
        problem = redis_problem(self.layout.redis_url, timeout=0.5, password=self.redis_password())
        return problem is None

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
        if not port_freed(HOST, public, PORT_RELEASE_S):
            raise ServerStartError(
                f"SC failed to start: port {Endpoint(HOST, public)} is in use "
                "(another cluster?); choose another with --sc-port"
            )
        if not port_free(HOST, private) and not self.layout.standby_ports:
            private = free_port()
        started = self._spawn_sc("sc", "SC", public, private)
        self._launcher.wait(ready.is_file, started, self.start_timeout)
        info = json.loads(ready.read_text())
        self.layout.sc_public_port = int(info["public_port"])
        self.layout.sc_private_port = int(info["private_port"])

    def _spawn_sc(self, name: str, label: str, public: int, private: int) -> Started:
        """Start an SC process ``name`` (``sc`` or a standby) on the given ports."""
        spu_command = f"{self.python} -m spu"
        self.admin_token  # noqa: B018 - writes the key file before the SC reads it
        # Managed SPUs inherit the SC's environment (TLS and auth included).
        env = {**self.env, **self.metrics_env(), **self.tls_env(), **self.auth_env()}
        argv = [
            self.python, "-m", "sc", "--redis-url", self.layout.redis_url, "--host", HOST,
            "--public-port", str(public), "--private-port", str(private),
            "--data-dir", str(self._spu_dirs.root), "--spu-command", spu_command,
            "--ready-file", str(self.data_dir / f"{name}.ready"),
        ]  # fmt: skip
        if self.layout.standby_ports:
            ports = [private] + [p[1] for p in self.layout.standby_ports]
            argv += ["--spu-sc-endpoints", ",".join(f"{HOST}:{p}" for p in ports)]
        if self.redis_password() is not None:
            argv += ["--redis-password-file", str(self.redis_password_file)]
        if self.layout.metrics:
            argv += ["--metrics-port", "0"]
        if self.default_tier:
            argv += ["--tier-root", str(self.tier_root)]
        return self._launcher.spawn(name, label, argv, env)

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
            self._launcher.wait(ready.is_file, started, self.start_timeout)

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
                    publicEndpoint={"port": ports[0], "ingress": [{"hostname": HOST}]},
                    privateEndpoint={"port": ports[1], "host": HOST},
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
            **self.metrics_env(),
            **self.tls_env(),
            **self.auth_env(),
            **spu_environment(
                spu_id,
                sc_endpoint=self.sc_private_endpoints,
                data_dir=folder,
                ports=(ports[0], ports[1]),
                host=HOST,
            ),
        }
        return self._launcher.spawn(
            f"spu-{spu_id}", f"SPU {spu_id}", [self.python, "-m", "spu"], env
        ).record

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
        logs = "".join(f"\n{self.spu_log(i)}:{log_tail(self.spu_log(i), 8)}" for i in missing)
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
        sc_new = any(started.name == "sc" for started in self._launcher.started)
        if not sc_new and pid_before is not None and self.spu_pid(spu_id) == pid_before:
            return True
        return "connected to the SC" in log_text(self.spu_log(spu_id), offset)

    # -- stop and status -----------------------------------------------------------------

    def stop(self) -> list[str]:
        """Stop every process (SC first, then SPUs, then Redis); keep the data.

        Returns:
            The names of the processes that were running.
        """
        files = [(name, self.pid_file(name)) for name in self.standby_names]
        files.append(("sc", self.pid_file("sc")))
        files += [(f"spu-{i}", self.spu_pid_file(i)) for i in self.known_spu_ids()]
        files.append(("redis", self.pid_file("redis")))
        stopped = []
        for name, pid_file in files:
            if stop_pid(pid_file, self.stop_timeout, name):
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
        for name in (*owned, self.redis_password_file.name):
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

    def status(self) -> ClusterStatus:
        """Every process of the cluster as it is now and, when the SC answers, every SPU
        (``spark_stream.local.status.read_status``)."""
        return read_status(self)
