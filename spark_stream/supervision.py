"""Server processes supervised by pid: pid files, liveness, spawn, stop and log tails.

Theory of operation. A supervised process is named by a ``PidRecord``: its pid *and* its
start time (``psutil`` create time). Only the pair names one process: the kernel
recycles pids, so a pid that runs with another start time is "not running", never a
match. The record goes to a pid file as ``"{pid} {create_time!r}\\n"``; a later
supervisor (the next SC, the next CLI run) reads it back and adopts the process. The
supervisor that started a process keeps nothing more than the record either, so the
starter and an adopter supervise it the same way.

``spawn`` starts a command (``posix_spawn``): stdin from ``/dev/null``, stdout and
stderr appended to a log file, in a session of its own by default so it outlives its
starter. A process we started stays our child until we collect its exit status:
``PidRecord.alive`` counts a zombie as gone, and ``running`` and every wait here reap
our exited children (``reap``), so no zombie remains. ``terminate`` sends SIGTERM, waits
(bounded), then SIGKILL and waits again; ``terminate_async`` runs the same steps inside
an event loop. The poll interval grows from 10 ms to 200 ms (``POLL_BACKOFF``).

Managed SPUs have an on-disk contract between the SC's provisioner, which writes it, and
the local cluster, which reads it for status and stop: ``ManagedSpuDirs``
(``{spus_dir}/spu-{id}/spu.pid`` and ``spu.log``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from spark_stream.backoff import BackoffPolicy

__all__ = [
    "POLL_BACKOFF",
    "PidRecord",
    "write_pid_file",
    "read_pid_file",
    "running",
    "reap",
    "spawn",
    "send_signal",
    "terminate",
    "terminate_async",
    "log_text",
    "log_tail",
    "ManagedSpuDirs",
    "METRICS_URL_FILE",
    "spu_environment",
]

METRICS_URL_FILE = "metrics.url"
"""Written in an SPU's data dir while it serves Prometheus metrics: the URL, one line
(removed when it stops or starts without them); ``cluster status`` lists it."""

log = logging.getLogger(__name__)

POLL_BACKOFF = BackoffPolicy(initial=0.01, maximum=0.2)
"""Intervals between checks of a process we cannot await (it may not be our child)."""

_SAME_START = 0.01
"""Create times closer than this (seconds) name the same process."""

_ENDING_S = 5.0
"""How long a process seen ending (its main thread a zombie) may take to be collectable."""


@dataclass(frozen=True, slots=True)
class PidRecord:
    """One process: its pid and its start time (``psutil`` create time, epoch seconds)."""

    pid: int
    create_time: float

    def __post_init__(self) -> None:
        # 0 and negative "pids" name process groups for kill() and waitpid(): never one process.
        if self.pid <= 0:
            raise ValueError(f"a pid must be positive, got {self.pid}")

    @classmethod
    def of(cls, pid: int) -> PidRecord:
        """The record of process ``pid`` as it runs now.

        A process that is already gone gets create time 0.0, so its record is never alive.
        """
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except psutil.Error:
            return cls(pid, 0.0)

    @classmethod
    def parse(cls, text: str) -> PidRecord | None:
        """The record in pid-file ``text``, or None when it is not ``"pid create_time"``."""
        try:
            pid_text, created_text = text.split()
            return cls(int(pid_text), float(created_text))
        except ValueError:
            return None

    def format(self) -> str:
        """The pid-file text of this record (``repr`` keeps the float exact)."""
        return f"{self.pid} {self.create_time!r}\n"

    def alive(self) -> bool:
        """True while this very process runs: same pid, same start time, not a zombie."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > _SAME_START:
                return False  # a recycled pid
            return proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def write_pid_file(path: Path, record: PidRecord) -> None:
    """Write ``record`` to ``path`` (replaced whole, so a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(record.format())
    tmp.replace(path)


def read_pid_file(path: Path) -> PidRecord | None:
    """The record in ``path``; None when the file is missing or holds anything else."""
    try:
        return PidRecord.parse(path.read_text())
    except (OSError, UnicodeDecodeError):
        return None


def running(path: Path) -> PidRecord | None:
    """The record in pid file ``path`` if that very process still runs.

    An exited child of ours named there is reaped on the way.
    """
    record = read_pid_file(path)
    if record is None:
        return None
    if record.alive():
        return record
    reap(record.pid)
    return None


def reap(pid: int, *, wait_s: float = 0.0) -> int | None:
    """Collect the exit status of ``pid`` if it is an exited child of ours.

    A process whose main thread has exited shows as a zombie while its other threads
    are still ending, and cannot be collected until they have: ``wait_s`` gives such a
    child that long (polled, bounded) when the caller knows it is ending.

    Returns:
        Its exit code (negative: the signal that ended it); None when it still runs (after
        ``wait_s``) or is not our child.
    """
    if pid <= 0:
        return None  # waitpid would take any child of the group
    deadline = time.monotonic() + wait_s
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)  # bounded by wait_s: the child's last threads are ending


def spawn(
    argv: Sequence[str],
    log_file: Path,
    *,
    env: Mapping[str, str] | None = None,
    new_session: bool = True,
) -> PidRecord:
    """Start ``argv`` (returns at once) with stdout and stderr appended to ``log_file``.

    One way for every server process: ``posix_spawn`` gives the pid, which is all a
    supervisor keeps (see the module doc). Signals Python ignores for itself (SIGPIPE,
    SIGXFSZ) get their defaults back, as ``subprocess`` does.

    Args:
        argv: the command; ``argv[0]`` is looked up on ``PATH``.
        log_file: created if missing (with its directory), appended to otherwise.
        env: variables added to this process's environment.
        new_session: detach (``setsid``) so the process outlives its starter and the
            terminal's signals; False keeps it in our process group (test children
            that a Ctrl-C must end too).

    Returns:
        The record of the new process.

    Raises:
        OSError: the command cannot be executed.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log_file), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    pid = os.posix_spawnp(
        argv[0],
        list(argv),
        {**os.environ, **(env or {})},
        file_actions=actions,
        setsid=new_session,
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
    )
    return PidRecord.of(pid)


def send_signal(record: PidRecord, sig: int) -> bool:
    """Send ``sig`` to ``record``'s process if that very process runs (never to a recycled pid).

    Returns:
        True when it was sent.
    """
    if not record.alive():
        return False
    try:
        os.kill(record.pid, sig)
    except ProcessLookupError:
        return False
    return True


class _Stop:
    """The steps of waiting for one process to end, and of ending it; no sleeping here.

    The sync and async drivers sleep for each delay the steps yield, so both follow one
    plan. ``exit_code`` is set when the process was our child and we reaped it.
    """

    def __init__(self, record: PidRecord, name: str) -> None:
        self.record = record
        self.name = name
        self.exit_code: int | None = None

    def gone(self) -> bool:
        """True once the process ended (a zombie counts); our exited child is reaped."""
        if self.record.alive():
            return False
        code = reap(self.record.pid, wait_s=_ENDING_S)
        if code is not None:
            self.exit_code = code
        return True

    def wait(self, timeout: float) -> Iterator[float]:
        """Delays between checks until the process is gone or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        backoff = POLL_BACKOFF.start()
        while not self.gone():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            yield min(backoff.next(), left)

    def terminate(self, timeout: float, sig: int) -> Iterator[float]:
        """Send ``sig``, wait up to ``timeout``, then SIGKILL and wait up to ``timeout`` again."""
        if self.gone():
            return
        send_signal(self.record, sig)
        yield from self.wait(timeout)
        if self.gone():
            return
        log.warning(
            "%s outlived %s for %ss, killing it pid=%d",
            self.name,
            _signal_name(sig),
            timeout,
            self.record.pid,
        )
        send_signal(self.record, signal.SIGKILL)
        yield from self.wait(timeout)
        if not self.gone():
            log.error("%s survived SIGKILL for %ss pid=%d", self.name, timeout, self.record.pid)


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def terminate(
    record: PidRecord, timeout: float, *, name: str = "process", sig: int = signal.SIGTERM
) -> int | None:
    """Stop ``record``'s process: SIGTERM, SIGKILL after ``timeout``; both waits bounded.

    Args:
        record: the process; nothing is sent unless that very process runs.
        timeout: seconds to wait after each signal.
        name: names the process in log lines.
        sig: the first signal (SIGKILL: a crash, as tests make one).

    Returns:
        Its exit code when it was our child (reaped here); None otherwise.
    """
    stop = _Stop(record, name)
    for delay in stop.terminate(timeout, sig):
        time.sleep(delay)  # polling the exit of a process that may not be our child
    return stop.exit_code


async def terminate_async(
    record: PidRecord,
    timeout: float,  # noqa: ASYNC109 - one bound per signal, not one for the call
    *,
    name: str = "process",
    sig: int = signal.SIGTERM,
) -> int | None:
    """``terminate`` for a caller inside an event loop (the same steps, awaited sleeps)."""
    stop = _Stop(record, name)
    for delay in stop.terminate(timeout, sig):
        await asyncio.sleep(delay)  # polling a process we cannot await
    return stop.exit_code


def log_text(path: Path, offset: int = 0) -> str:
    """What ``path`` holds from byte ``offset`` on ('' when it cannot be read)."""
    with contextlib.suppress(OSError), open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")
    return ""


def log_tail(path: Path, lines: int = 15, *, offset: int = 0) -> str:
    """The last ``lines`` lines of ``path`` (from byte ``offset``) for an error message.

    Returns:
        Each line on its own line, indented by two spaces after a newline, ready to
        follow ``"...; log {path}:"``; '' when the log is empty or missing.
    """
    tail = log_text(path, offset).splitlines()[-lines:]
    return "\n  " + "\n  ".join(tail) if tail else ""


@dataclass(frozen=True, slots=True)
class ManagedSpuDirs:
    """Where managed SPUs live under ``root``: ``spu-{id}/`` with ``spu.pid`` and ``spu.log``.

    The SC's provisioner writes this layout and the local cluster reads it; the names
    stay as they are because existing data directories hold them.
    """

    root: Path

    def spu_dir(self, spu_id: int) -> Path:
        """The data dir of SPU ``spu_id``."""
        return self.root / f"spu-{spu_id}"

    def pid_file(self, spu_id: int) -> Path:
        """The pid file of managed SPU ``spu_id``."""
        return self.spu_dir(spu_id) / "spu.pid"

    def log_file(self, spu_id: int) -> Path:
        """The log (stdout and stderr) of managed SPU ``spu_id``."""
        return self.spu_dir(spu_id) / "spu.log"

    def metrics_file(self, spu_id: int) -> Path:
        """Where SPU ``spu_id`` writes its metrics URL (``METRICS_URL_FILE``)."""
        return self.spu_dir(spu_id) / METRICS_URL_FILE

    def spu_ids(self) -> list[int]:
        """The ids that have a data dir here, ascending."""
        if not self.root.is_dir():
            return []
        names = (child.name for child in self.root.iterdir())
        return sorted(int(n[4:]) for n in names if n.startswith("spu-") and n[4:].isdigit())


def spu_environment(
    spu_id: int,
    *,
    sc_endpoint: str,
    data_dir: Path,
    ports: tuple[int, int] = (0, 0),
    host: str | None = None,
    secret: str | None = None,
    settings: Mapping[str, object] | None = None,
) -> dict[str, str]:
    """The ``FLUVIO_SPU_*`` variables that configure an SPU process (``spu.settings``).

    The one place a supervisor (the SC's provisioner, the local cluster, a test) spells
    the SPU's settings as environment variables.

    Args:
        spu_id: the SPU id registered in the SC.
        sc_endpoint: the SC's private ``host:port``.
        data_dir: where the SPU keeps its replicas.
        ports: (public, private); 0 lets the SPU pick and report free ones.
        host: the address both servers bind to (the SPU's default when None).
        secret: the SPU's own secret (``FLUVIO_SPU_SECRET``); None: the SPU reads it
            from the 0600 file in its data dir (``spark_stream.spu_identity``).
        settings: more ``SpuSettings`` fields, e.g. ``{"replica_max_lag_ms": 2000}``.
    """
    env = {
        "FLUVIO_SPU_ID": str(spu_id),
        "FLUVIO_SPU_SC_ENDPOINT": sc_endpoint,
        "FLUVIO_SPU_DATA_DIR": str(data_dir),
        "FLUVIO_SPU_PUBLIC_PORT": str(ports[0]),
        "FLUVIO_SPU_PRIVATE_PORT": str(ports[1]),
    }
    if host is not None:
        env["FLUVIO_SPU_HOST"] = host
    if secret is not None:
        env["FLUVIO_SPU_SECRET"] = secret
    for key, value in (settings or {}).items():
        env[f"FLUVIO_SPU_{key.upper()}"] = str(value)
    return env
