"""The SC as a real subprocess (``python -m sc``) against a real Redis.

``ScChild`` starts the SC on loopback with a ready file, waits (bounded) until it
listens, and stops it by pid: SIGTERM (clean) or SIGKILL (crash). ``sc_factory`` hands a
test as many as it needs and stops whatever is still running at the end.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


class ScChild:
    """One ``python -m sc`` child process.

    Args:
        redis_url: the KV store.
        workdir: ready file, log and managed SPUs' data go here.
        heartbeat: the SC's ``heartbeat_timeout_s``.
        ports: fixed (public, private) ports, kept across restarts; default free ones.
        spu_command: argv template of managed SPUs.
    """

    def __init__(
        self,
        redis_url: str,
        workdir: Path,
        *,
        heartbeat: float = 1.5,
        ports: tuple[int, int] = (0, 0),
        spu_command: Sequence[str] | None = None,
    ) -> None:
        self.redis_url = redis_url
        self.workdir = workdir
        self.heartbeat = heartbeat
        self.ports = ports
        self.spu_command = spu_command
        self.proc: subprocess.Popen[bytes] | None = None
        self.public_port = 0
        self.private_port = 0
        self.log_path = workdir / "sc.log"
        workdir.mkdir(parents=True, exist_ok=True)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 20.0) -> ScChild:
        """Start the SC and wait until both servers listen."""
        ready = self.workdir / "ready.json"
        ready.unlink(missing_ok=True)
        argv = [
            sys.executable,
            "-m",
            "sc",
            "--redis-url",
            self.redis_url,
            "--public-port",
            str(self.ports[0]),
            "--private-port",
            str(self.ports[1]),
            "--heartbeat-timeout",
            str(self.heartbeat),
            "--data-dir",
            str(self.workdir / "data"),
            "--ready-file",
            str(ready),
        ]
        if self.spu_command:
            argv += ["--spu-command", shlex.join(self.spu_command)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, cwd=REPO, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"sc exited with {self.proc.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"sc not ready within {timeout}s:\n{self.log()}")
            time.sleep(0.02)  # polling the ready file, bounded by the deadline
        info = json.loads(ready.read_text())
        assert info["pid"] == self.proc.pid
        self.public_port, self.private_port = info["public_port"], info["private_port"]
        return self

    def log(self) -> str:
        """The SC's log so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, wait, SIGKILL if needed; return the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """SIGKILL (a crash) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture
def sc_factory(redis_url: str, tmp_path: Path) -> Iterator[type[ScChild]]:
    """Make ``ScChild``es on the test's Redis; every one is stopped at the end."""
    made: list[ScChild] = []

    class Factory(ScChild):
        def __init__(self, **kwargs: object) -> None:
            workdir = kwargs.pop("workdir", tmp_path / f"sc{len(made)}")
            url = kwargs.pop("redis_url", redis_url)
            super().__init__(url, workdir, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    try:
        yield Factory
    finally:
        for sc in made:
            sc.stop()
