"""Redis, the SC, SPUs and a client, each in its own network namespace (``NetnsLab``).

Every server listens on its namespace's address with its usual port (Redis 6379, SC
9003/9004, SPU 9005/9006: the namespaces do not share ports), is started with ``ip
netns exec`` as a ``ChildProcess`` and stopped by pid. The test process itself has no
address on the bridge: it talks to the cluster only through ``JsonChild`` clients
(``tests.integration.netns_client``) running in namespaces of their own, and reads
readiness from files (ready file, log lines), which the namespaces share.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Self

from spark_stream.errors import ServerStartError
from spark_stream.local.redis_server import find_redis_server, redis_argv
from spark_stream.records import decode_frames
from spu.storage import ReplicaLog
from spu.storage.layout import replica_dir
from tests.harness.netns import NetnsHost, NetnsLab
from tests.harness.processes import REPO, ChildProcess, ScChild, SpuChild

__all__ = ["JsonChild", "NetnsCluster", "replica_values"]

REDIS_PORT = 6379
SC_PORTS = (9003, 9004)
SPU_PORTS = (9005, 9006)
_POLL = 0.2


class JsonChild:
    """``tests.integration.netns_client`` in ``host``'s namespace: ``call`` one command.

    Args:
        host: the namespace it runs in.
        sc_endpoint: the SC's public ``host:port``.
        log_path: its stderr.
    """

    def __init__(self, host: NetnsHost, sc_endpoint: str, log_path: Path) -> None:
        self.host = host
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("ab")
        pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        argv = [sys.executable, "-m", "tests.integration.netns_client", sc_endpoint]
        self.proc = subprocess.Popen(
            [*host.wrapper, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": pythonpath},
            text=True,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def call(self, op: str, timeout: float = 60.0, **args: Any) -> Any:
        """Run one command; its ``ok`` value.

        Raises:
            ServerStartError: the command failed (its typed error in the message), the
                child died, or no answer within ``timeout`` (a hang, not a result).
        """
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        try:
            reply = json.loads(self._lines.get(timeout=timeout))
        except queue.Empty:
            raise ServerStartError(
                f"client in {self.host.netns}: no answer to {op} within {timeout}s "
                f"(alive: {self.proc.poll() is None}); log {self.log_path}"
            ) from None
        if "error" in reply:
            raise ServerStartError(f"client in {self.host.netns}: {op}: {reply['error']}")
        return reply["ok"]

    def wait(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``check()`` (which calls this client) until true, bounded."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise ServerStartError(f"no {what} within {timeout}s")
            time.sleep(_POLL)  # bounded poll of the cluster's view

    def close(self) -> None:
        """Ask it to quit; kill it by pid if it does not."""
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.write('{"op": "quit"}\n')
                self.proc.stdin.flush()
            self.proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=15)
        finally:
            self._pump_thread.join(timeout=15)  # it ends at the end of the output
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()
            self._log.close()


class NetnsCluster:
    """Redis, an SC and SPUs ``spu_ids``, each in a namespace of ``lab``, and a client.

    Args:
        lab: where the namespaces are created (and removed by the caller).
        workdir: logs and data of every process.
        spu_ids: the SPUs to register and run.
        spu_settings: ``SpuSettings`` fields for every SPU.
        heartbeat_timeout_s: the SC's SPU heartbeat timeout.
    """

    def __init__(
        self,
        lab: NetnsLab,
        workdir: Path,
        spu_ids: list[int],
        *,
        spu_settings: dict[str, Any] | None = None,
        heartbeat_timeout_s: float = 3.0,
    ) -> None:
        self.lab = lab
        self.workdir = workdir
        self.spu_ids = spu_ids
        self.spu_settings = {"heartbeat_interval_s": 0.5, **(spu_settings or {})}
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.redis: ChildProcess | None = None
        self.sc: ScChild | None = None
        self.spus: dict[int, SpuChild] = {}
        self.spu_hosts: dict[int, NetnsHost] = {}
        self.clients: list[JsonChild] = []
        self.client: JsonChild | None = None

    @property
    def sc_endpoint(self) -> str:
        """The SC's public address."""
        return f"{self.lab.hosts['sc'].address}:{SC_PORTS[0]}"

    def start(self, timeout: float = 90.0) -> Self:
        """Start everything; wait until the SC lists every SPU online."""
        redis_host, sc_host = self.lab.add("redis"), self.lab.add("sc")
        client_host = self.lab.add("client")
        for spu_id in self.spu_ids:
            self.spu_hosts[spu_id] = self.lab.add(f"spu{spu_id}")
        data = self.workdir / "redis"
        data.mkdir(parents=True)
        log = self.workdir / "redis.log"
        argv = redis_argv(find_redis_server(), REDIS_PORT, data, log, host=redis_host.address)
        self.redis = ChildProcess("redis", argv, log, wrapper=redis_host.wrapper)
        self.redis.spawn()
        self.redis.wait_for(
            lambda: "Ready to accept connections" in self.redis_log(), timeout, "Redis ready"
        )
        self.sc = ScChild(
            f"redis://{redis_host.address}:{REDIS_PORT}/0",
            self.workdir / "sc",
            heartbeat_timeout_s=self.heartbeat_timeout_s,
            ports=SC_PORTS,
            host=sc_host.address,
            wrapper=sc_host.wrapper,
        ).start(timeout)
        self.client = self.client_in(client_host)
        for spu_id, host in self.spu_hosts.items():
            self.client.call(
                "register_spu",
                id=spu_id,
                host=host.address,
                public_port=SPU_PORTS[0],
                private_port=SPU_PORTS[1],
            )
            self.spus[spu_id] = SpuChild(
                spu_id,
                SC_PORTS[1],
                self.workdir / f"spu-{spu_id}",
                SPU_PORTS,
                self.spu_settings,
                host=host.address,
                sc_host=sc_host.address,
                wrapper=host.wrapper,
            )
        for spu in self.spus.values():
            spu.spawn()  # all at once: their start-up overlaps
        for spu in self.spus.values():
            spu.wait_ready(timeout)
        self.wait_online(set(self.spu_ids), timeout)
        return self

    def redis_log(self) -> str:
        """What Redis wrote so far."""
        assert self.redis is not None
        return self.redis.log()

    def client_in(self, host: NetnsHost) -> JsonChild:
        """A client process in ``host``'s namespace (closed by ``close``)."""
        child = JsonChild(host, self.sc_endpoint, self.workdir / f"client-{host.name}.log")
        self.clients.append(child)
        return child

    def wait_online(self, ids: set[int], timeout: float = 60.0) -> None:
        """Wait until the SC lists every SPU of ``ids`` online."""
        client = self._client()
        client.wait(lambda: ids <= set(client.call("online_spus")), timeout, f"SPUs {ids} online")

    def _client(self) -> JsonChild:
        if self.client is None:
            raise ServerStartError("the cluster is not started")
        return self.client

    def close(self) -> None:
        """Stop clients, SPUs, the SC and Redis, each by pid; safe after a failed start."""
        for client in self.clients:
            client.close()
        for spu in self.spus.values():
            spu.stop()
        if self.sc is not None:
            self.sc.stop()
        if self.redis is not None:
            self.redis.stop()


def replica_values(spu: SpuChild, topic: str, partition: int) -> list[str]:
    """Every record value of an SPU's copy of a partition, read from its files.

    Only while the SPU is stopped (the files are then nobody's).
    """
    log = ReplicaLog.open(replica_dir(spu.workdir, topic, partition))
    try:
        out: list[str] = []
        offset = log.log_start_offset
        while offset < log.leo:
            piece = log.read(offset, end_offset=log.leo)
            for batch in decode_frames(piece.data):
                out += [v.decode() for v in batch.column("value").to_pylist()]
            offset = piece.next_offset
        return out
    finally:
        log.close()
