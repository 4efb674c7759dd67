"""Managed SPUs: the provisioner interface and the local-process provisioner.

Theory of operation. The SPU group controller decides which managed SPUs exist
(``ProvisionSpu`` / ``TerminateSpu`` actions); a ``Provisioner`` makes it so. The
``LocalProcessProvisioner`` runs one process per SPU id from a configurable command:

- **Start**: the command (an argv list whose items may hold ``{spu_id}``, ``{name}``,
  ``{group}``, ``{data_dir}``, ``{sc_endpoint}``, ``{public_port}``, ``{private_port}``)
  runs in its own session (``spark_stream.supervision.spawn``; the SC keeps only the
  pid) with ``FLUVIO_SPU_*`` variables set (id, SC endpoint, token, data dir, ports), so
  ``SpuSettings`` picks them up. Output goes to ``{data_dir}/spu.log``, the pid and the
  process's start time to ``{data_dir}/spu.pid`` (``ManagedSpuDirs``: the local cluster
  reads the same files).
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
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from sc.actions import ProvisionSpu, TerminateSpu
from spark_stream.errors import ProvisionError
from spark_stream.supervision import (
    ManagedSpuDirs,
    PidRecord,
    reap,
    running,
    spawn,
    spu_environment,
    terminate_async,
    write_pid_file,
)

__all__ = ["Provisioner", "NullProvisioner", "LocalProcessProvisioner"]

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
        self._dirs = ManagedSpuDirs(self.data_dir)
        self._procs: dict[int, PidRecord] = {}

    def spu_dir(self, spu_id: int) -> Path:
        """The data dir of managed SPU ``spu_id``."""
        return self._dirs.spu_dir(spu_id)

    def running(self) -> dict[int, int]:
        return {i: p.pid for i, p in self._procs.items() if p.alive()}

    def _find(self, spu_id: int) -> PidRecord | None:
        """The live process of ``spu_id``: known to us, or adopted from its pid file."""
        proc = self._procs.get(spu_id)
        if proc is not None and proc.alive():
            return proc
        self._forget(spu_id)
        found = running(self._dirs.pid_file(spu_id))
        if found is None:
            return None
        log.info("spu process adopted spu=%d pid=%d", spu_id, found.pid)
        self._procs[spu_id] = found
        return found

    def _forget(self, spu_id: int) -> None:
        proc = self._procs.pop(spu_id, None)
        if proc is not None:
            reap(proc.pid)  # our exited child leaves no zombie

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
            **self._env,
            **spu_environment(
                spu.spu_id,
                sc_endpoint=self.sc_endpoint,
                data_dir=folder,
                ports=(public, private),
                token=self._token,
                settings={"group": spu.group},
            ),
        }
        try:
            proc = spawn(argv, self._dirs.log_file(spu.spu_id), env=env)
        except OSError as exc:
            raise ProvisionError(f"cannot start SPU command {argv!r}: {exc}") from exc
        # A process that exited at once has a record that never counts as alive: the
        # next ensure starts it again.
        self._procs[spu.spu_id] = proc
        write_pid_file(self._dirs.pid_file(spu.spu_id), proc)
        log.info(
            "spu process started spu=%d pid=%d group=%s argv=%s",
            spu.spu_id,
            proc.pid,
            spu.group,
            argv,
        )

    async def terminate(self, spu: TerminateSpu) -> None:
        await self._stop(spu.spu_id)

    async def _stop(self, spu_id: int) -> None:
        proc = self._find(spu_id)
        if proc is not None:
            await terminate_async(proc, self.stop_timeout, name=f"spu process spu={spu_id}")
            self._forget(spu_id)
            log.info("spu process stopped spu=%d pid=%d", spu_id, proc.pid)
        self._dirs.pid_file(spu_id).unlink(missing_ok=True)

    async def close(self) -> None:
        """Stop the SPUs this provisioner runs when ``stop_on_close`` (clean SC stop)."""
        if self.stop_on_close:
            for spu_id in sorted(self._procs):
                await self._stop(spu_id)
