"""Managed SPUs: the provisioner interface and the local-process provisioner.

Theory of operation. The SPU group controller decides which managed SPUs exist
(``ProvisionSpu`` / ``TerminateSpu`` actions); a ``Provisioner`` makes it so. The
``LocalProcessProvisioner`` runs one process per SPU id from a configurable command:

- **Start**: the command (an argv list whose items may hold ``{spu_id}``, ``{name}``,
  ``{group}``, ``{data_dir}``, ``{sc_endpoint}``, ``{public_port}``, ``{private_port}``)
  runs in its own session (``posix_spawn``; the SC keeps only the pid) with
  ``FLUVIO_SPU_*`` variables set (id, SC endpoint, token, data dir, ports), so
  ``SpuSettings`` picks them up. Output goes to
  ``{data_dir}/spu.log``. The pid and the process's start time go to
  ``{data_dir}/spu.pid``.
- **Idempotent and restart-safe**: provisioning an id whose process runs is a no-op.
  After an SC crash the SPU processes live on; the next SC finds them through their pid
  files (same pid *and* start time, so a recycled pid is never mistaken for an SPU) and
  adopts them instead of starting duplicates. ``ensure`` re-provisions every managed
  SPU at start-up, which also restarts SPUs that died meanwhile.
- **Stop**: SIGTERM to the pid, SIGKILL after ``stop_timeout``; the data dir stays (as
  for any removed replica, storage is kept).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from sc.actions import ProvisionSpu, TerminateSpu
from spark_stream.errors import ProvisionError

__all__ = ["Provisioner", "NullProvisioner", "LocalProcessProvisioner", "SpuProcess"]

log = logging.getLogger(__name__)


class Provisioner(abc.ABC):
    """Starts and stops managed SPUs; every method is idempotent."""

    @abc.abstractmethod
    async def provision(self, spu: ProvisionSpu) -> None:
        """Make sure managed SPU ``spu.spu_id`` runs."""

    @abc.abstractmethod
    async def terminate(self, spu: TerminateSpu) -> None:
        """Make sure managed SPU ``spu.spu_id`` does not run."""

    async def ensure(self, spus: Iterable[ProvisionSpu]) -> None:
        """Provision each of ``spus`` (start-up: adopt or restart what should run)."""
        for spu in spus:
            await self.provision(spu)

    @abc.abstractmethod
    def running(self) -> dict[int, int]:
        """SPU id -> pid (or another handle) of the managed SPUs running now."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources when the SC stops."""


class NullProvisioner(Provisioner):
    """Records what it was asked and runs nothing (tests, custom-only clusters)."""

    def __init__(self) -> None:
        self._running: dict[int, int] = {}

    async def provision(self, spu: ProvisionSpu) -> None:
        self._running[spu.spu_id] = 0

    async def terminate(self, spu: TerminateSpu) -> None:
        self._running.pop(spu.spu_id, None)

    def running(self) -> dict[int, int]:
        return dict(self._running)


@dataclass(frozen=True, slots=True)
class SpuProcess:
    """A running managed SPU: its pid and its start time (``psutil`` create time)."""

    spu_id: int
    pid: int
    create_time: float

    def alive(self) -> bool:
        """True while this very process (not a recycled pid) runs and is not a zombie."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > 0.01:
                return False
            return proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


class LocalProcessProvisioner(Provisioner):
    """Runs each managed SPU as a local process.

    Args:
        command: argv template of an SPU process (see the module doc for placeholders).
        data_dir: parent of each SPU's data dir (``{data_dir}/spu-{id}``).
        sc_endpoint: the SC's private ``host:port``, passed to the SPUs.
        token: the shared secret the SPUs present (passed in the environment only).
        env: extra environment variables for the SPU processes.
        stop_timeout: seconds between SIGTERM and SIGKILL.
        stop_on_close: terminate the SPUs when the SC stops cleanly.
    """

    def __init__(
        self,
        command: Sequence[str],
        data_dir: str | os.PathLike[str],
        *,
        sc_endpoint: str,
        token: str,
        env: Mapping[str, str] | None = None,
        stop_timeout: float = 5.0,
        stop_on_close: bool = True,
    ) -> None:
        if not command:
            raise ValueError("the SPU command must not be empty")
        self.command = list(command)
        self.data_dir = Path(data_dir)
        self.sc_endpoint = sc_endpoint
        self._token = token
        self._env = dict(env or {})
        self.stop_timeout = stop_timeout
        self.stop_on_close = stop_on_close
        self._procs: dict[int, SpuProcess] = {}

    def spu_dir(self, spu_id: int) -> Path:
        """The data dir of managed SPU ``spu_id``."""
        return self.data_dir / f"spu-{spu_id}"

    def _pid_file(self, spu_id: int) -> Path:
        return self.spu_dir(spu_id) / "spu.pid"

    def running(self) -> dict[int, int]:
        return {i: p.pid for i, p in self._procs.items() if p.alive()}

    def _find(self, spu_id: int) -> SpuProcess | None:
        """The live process of ``spu_id``: known to us, or adopted from its pid file."""
        proc = self._procs.get(spu_id)
        if proc is not None and proc.alive():
            return proc
        self._reap(spu_id)
        try:
            pid_text, created_text = self._pid_file(spu_id).read_text().split()
            found = SpuProcess(spu_id, int(pid_text), float(created_text))
        except (OSError, ValueError):
            return None
        if not found.alive():
            return None
        log.info("spu process adopted spu=%d pid=%d", spu_id, found.pid)
        self._procs[spu_id] = found
        return found

    def _reap(self, spu_id: int) -> None:
        proc = self._procs.pop(spu_id, None)
        if proc is not None:
            _reap_zombie(proc.pid)

    async def provision(self, spu: ProvisionSpu) -> None:
        if self._find(spu.spu_id) is not None:
            return
        folder = self.spu_dir(spu.spu_id)
        folder.mkdir(parents=True, exist_ok=True)
        public = spu.template.public_port or 0
        private = spu.template.private_port or 0
        fields = {
            "spu_id": spu.spu_id,
            "name": spu.name,
            "group": spu.group,
            "data_dir": str(folder),
            "sc_endpoint": self.sc_endpoint,
            "public_port": public,
            "private_port": private,
        }
        argv = [arg.format(**fields) for arg in self.command]
        env = {
            **os.environ,
            **self._env,
            "FLUVIO_SPU_ID": str(spu.spu_id),
            "FLUVIO_SPU_SC_ENDPOINT": self.sc_endpoint,
            "FLUVIO_SPU_TOKEN": self._token,
            "FLUVIO_SPU_DATA_DIR": str(folder),
            "FLUVIO_SPU_PUBLIC_PORT": str(public),
            "FLUVIO_SPU_PRIVATE_PORT": str(private),
        }
        pid = self._spawn(argv, env, folder)
        try:
            created = psutil.Process(pid).create_time()
        except psutil.Error:
            created = 0.0  # it already exited; the next ensure starts it again
        proc = SpuProcess(spu.spu_id, pid, created)
        self._procs[spu.spu_id] = proc
        self._pid_file(spu.spu_id).write_text(f"{proc.pid} {proc.create_time!r}\n")
        log.info(
            "spu process started spu=%d pid=%d group=%s argv=%s", spu.spu_id, pid, spu.group, argv
        )

    @staticmethod
    def _spawn(argv: list[str], env: dict[str, str], folder: Path) -> int:
        """Start the process (returns at once) with its output appended to ``spu.log``.

        ``posix_spawn`` rather than ``Popen``: the SC keeps only the pid, which is all a
        later SC has too after adopting the process.

        Raises:
            ProvisionError: the command cannot be executed.
        """
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (
                os.POSIX_SPAWN_OPEN,
                1,
                str(folder / "spu.log"),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                0o644,
            ),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ]
        try:
            return os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsid=True)
        except OSError as exc:
            raise ProvisionError(f"cannot start SPU command {argv!r}: {exc}") from exc

    async def terminate(self, spu: TerminateSpu) -> None:
        await self._stop(spu.spu_id)

    async def _stop(self, spu_id: int) -> None:
        proc = self._find(spu_id)
        if proc is None:
            self._pid_file(spu_id).unlink(missing_ok=True)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        if not await self._wait_gone(proc, self.stop_timeout):
            log.warning("spu process ignored SIGTERM, killing it spu=%d pid=%d", spu_id, proc.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            await self._wait_gone(proc, self.stop_timeout)
        self._reap(spu_id)
        self._pid_file(spu_id).unlink(missing_ok=True)
        log.info("spu process stopped spu=%d pid=%d", spu_id, proc.pid)

    @staticmethod
    async def _wait_gone(proc: SpuProcess, timeout: float) -> bool:  # noqa: ASYNC109
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.01
        while loop.time() < deadline:
            _reap_zombie(proc.pid)
            if not proc.alive():
                return True
            await asyncio.sleep(delay)  # polling a process we cannot await
            delay = min(delay * 2, 0.2)
        return False

    async def close(self) -> None:
        """Stop the SPUs this provisioner runs when ``stop_on_close`` (clean SC stop)."""
        if self.stop_on_close:
            for spu_id in sorted(self._procs):
                await self._stop(spu_id)


def _reap_zombie(pid: int) -> None:
    """Collect the exit status of ``pid`` if it is our exited child (no zombie remains)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
