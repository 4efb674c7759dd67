"""Start and stop a local cluster's processes: spawn, bounded waits, rollback, ports.

Why apart from ``cluster``: what a start does with one process (spawn it detached with its
pid and log file, wait for it with a bound and an error that names it and quotes its log,
stop it again when the start fails) is the same for Redis, every SC and custom SPUs; the
cluster decides which processes to run, this module how. A ``Launcher`` remembers what it
spawned since it was last cleared, so a failed start stops exactly that and not the
processes it found running.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from spark_stream.errors import ServerStartError
from spark_stream.supervision import (
    PidRecord,
    log_tail,
    log_text,
    read_pid_file,
    running,
    spawn,
    terminate,
    write_pid_file,
)

__all__ = [
    "Launcher",
    "Started",
    "exit_reason",
    "log_size",
    "port_free",
    "port_freed",
    "process_alive",
    "stop_pid",
]

# A log line of our servers: "date time LEVEL logger message".
_ERROR_LINE = re.compile(r"^\S+ \S+ ERROR \S+ (?P<message>.+)$", re.MULTILINE)


def process_alive(pid_file: Path) -> int | None:
    """The pid recorded in ``pid_file`` if that very process still runs (not a zombie)."""
    record = running(pid_file)
    return record.pid if record is not None else None


@dataclass(frozen=True, slots=True)
class Started:
    """A process this start spawned: stopped again if the start fails."""

    name: str
    label: str
    pid_file: Path
    record: PidRecord
    log_offset: int


def exit_reason(log_file: Path, offset: int, name: str) -> str:
    """The last ERROR our server logged since ``offset`` (its own "x failed to start: "
    prefix dropped), else "it exited"."""
    errors = _ERROR_LINE.findall(log_text(log_file, offset))
    if not errors:
        return "it exited"
    message: str = errors[-1].strip()
    prefix = f"{name} failed to start: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def stop_pid(pid_file: Path, timeout: float, name: str) -> bool:
    """SIGTERM the recorded process, SIGKILL after ``timeout``; True if one was running."""
    record = running(pid_file)
    if record is not None:
        terminate(record, timeout, name=name)
    pid_file.unlink(missing_ok=True)
    return record is not None


def log_size(path: Path) -> int:
    """The size of ``path`` (0 if missing): where new log lines of a start begin."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def port_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now."""
    with socket.socket() as sock:
        # As the servers bind: connections of a previous run in TIME_WAIT do not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_freed(host: str, port: int, within_s: float) -> bool:
    """Whether ``port`` is free, or becomes free within ``within_s`` (polled).

    A killed SC's main thread can be gone (the pid file then names no running
    process) while its other threads still end and hold its sockets open; a restart
    right after a crash waits that out instead of calling the port taken.
    """
    deadline = time.monotonic() + within_s
    while not port_free(host, port):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # bounded by the deadline
    return True


class Launcher:
    """Spawns processes detached and records them; stops what it spawned on demand.

    Args:
        pid_file: the pid file of process ``name``.
        log_file: the log file of process ``name``.
    """

    def __init__(self, pid_file: Callable[[str], Path], log_file: Callable[[str], Path]) -> None:
        self._pid_file = pid_file
        self._log_file = log_file
        self.started: list[Started] = []
        """What was spawned since the last ``clear`` (or ``stop_started``), oldest first."""

    def clear(self) -> None:
        """Forget what was spawned: it is the cluster's now, not a start's to undo."""
        self.started = []

    def spawn(
        self, name: str, label: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> Started:
        """Start a detached process (own session), record it in its pid file and in
        ``started``.

        Raises:
            ServerStartError: ``argv[0]`` cannot be run.
        """
        log_file = self._log_file(name)
        offset = log_file.stat().st_size if log_file.exists() else 0
        try:
            record = spawn(argv, log_file, env=env)
        except OSError as exc:
            raise ServerStartError(
                f"{label} failed to start: cannot run {argv[0]!r}: {exc}"
            ) from exc
        pid_file = self._pid_file(name)
        write_pid_file(pid_file, record)
        started = Started(name, label, pid_file, record, offset)
        self.started.append(started)
        return started

    def wait(self, check: Callable[[], bool], started: Started, timeout: float) -> None:
        """Poll ``check`` until true; fail naming the component if it exits or times out.

        Raises:
            ServerStartError: the process exited (with the last error it logged) or
                ``check`` stayed false for ``timeout`` seconds; the log tail is quoted.
        """
        log_file = self._log_file(started.name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            if not started.record.alive():
                reason = exit_reason(log_file, started.log_offset, started.name)
                raise ServerStartError(
                    f"{started.label} failed to start: {reason}; log "
                    f"{log_file}:{log_tail(log_file, offset=started.log_offset)}"
                )
            time.sleep(0.05)  # bounded poll of a condition in another process
        raise ServerStartError(
            f"{started.label} failed to start: not ready within {timeout}s; log "
            f"{log_file}:{log_tail(log_file, offset=started.log_offset)}"
        )

    def stop_started(self, timeout: float, on_stopped: Callable[[Started], None]) -> None:
        """Stop what was spawned, newest first (SPUs, SC, Redis), then forget it.

        Each pid file goes unless another process rewrote it since; ``on_stopped`` is
        called after each stop (the cluster removes the SC's ready file).
        """
        for started in reversed(self.started):
            terminate(started.record, timeout, name=started.name)
            if read_pid_file(started.pid_file) == started.record:
                started.pid_file.unlink(missing_ok=True)
            on_stopped(started)
        self.started = []
