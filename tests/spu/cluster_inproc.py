"""A whole cluster in one event loop: the real SC app (in-memory KV) and real SPU apps.

Every hop is a real loopback socket speaking the real protocol; only the processes are
collapsed into one, so replication and failover logic can be tested in seconds.
Stopping an SPU app here is a clean stop (its sockets close), which the SC sees as a
disconnect, as it sees a killed process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.local import free_port
from spark_stream.net.connection import Connection
from spu.app import SpuApp
from spu.settings import SpuSettings
from tests.sc.sim_spu import sim_secret
from tests.spu.helpers import until

HOST = "127.0.0.1"


class InProcessCluster:
    """An SC and SPUs ``spu_ids`` on loopback, data under ``root``.

    Args:
        root: data directories go below it.
        spu_ids: the SPUs, registered as custom SPUs with fixed ports.
        spu_settings: overrides for every SPU (``replica_max_lag_ms``...).
    """

    def __init__(self, root: Path, spu_ids: list[int], **spu_settings: Any) -> None:
        self.root = root
        self.spu_ids = spu_ids
        self.spu_settings = spu_settings
        self.sc: ScApp | None = None
        self.admin: AdminClient | None = None
        self.spus: dict[int, SpuApp] = {}
        self.ports = {i: (free_port(), free_port()) for i in spu_ids}
        self._conns: list[Connection] = []

    async def __aenter__(self) -> Self:
        settings = load_settings(
            ScSettings,
            host=HOST,
            public_port=0,
            private_port=0,
            heartbeat_timeout_s=3.0,
            data_dir=str(self.root / "sc"),
        )
        self.sc = ScApp(settings, kv=MemoryKvStore())
        await self.sc.start()
        self.admin = await AdminClient(HOST, self.sc.public_port, timeout=10).connect()
        for spu_id, (public, private) in self.ports.items():
            await self.admin.register_spu(
                spu_id,
                secret=sim_secret(spu_id),
                publicEndpoint={"port": public, "ingress": [{"hostname": HOST}]},
                privateEndpoint={"port": private, "host": HOST},
            )
        for spu_id in self.spu_ids:
            await self.start_spu(spu_id)
        await until(self._all_online, what="every SPU online")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for conn in self._conns:
            await conn.close()
        for spu_id in list(self.spus):
            await self.stop_spu(spu_id)
        if self.admin is not None:
            await self.admin.close()
        if self.sc is not None:
            await self.sc.stop()

    async def _all_online(self) -> bool:
        assert self.admin is not None
        spus = await self.admin.list_spus()
        online = {s.spu_id for s in spus if s.status.is_online}
        return set(self.spus) <= online

    async def start_spu(self, spu_id: int) -> SpuApp:
        """Start (or restart) SPU ``spu_id`` on its ports and data directory."""
        assert self.sc is not None
        public, private = self.ports[spu_id]
        settings = load_settings(
            SpuSettings,
            id=spu_id,
            host=HOST,
            public_port=public,
            private_port=private,
            sc_endpoint=f"{HOST}:{self.sc.private_port}",
            data_dir=str(self.root / f"spu-{spu_id}"),
            heartbeat_interval_s=0.5,
            secret=sim_secret(spu_id),
            **self.spu_settings,
        )
        app = await SpuApp(settings).start()
        self.spus[spu_id] = app
        return app

    async def stop_spu(self, spu_id: int) -> None:
        """Stop SPU ``spu_id`` (its storage stays)."""
        app = self.spus.pop(spu_id)
        await app.stop()

    async def conn(self, spu_id: int) -> Connection:
        """A client connection to SPU ``spu_id``'s public port (closed at exit)."""
        conn = await Connection.open(HOST, self.ports[spu_id][0])
        self._conns.append(conn)
        return conn

    async def create_topic(self, name: str, **spec: Any) -> None:
        """Create a topic and wait until every partition has an online leader."""
        assert self.admin is not None
        admin = self.admin
        await admin.create_topic(name, **spec)
        count = spec.get("partitions", 1)

        async def ready() -> bool:
            parts = await admin.list_partitions(name)
            if len(parts) != count or any(p.status.resolution.value != "Online" for p in parts):
                return False
            return all(
                (leader := p.status.leader) in self.spus
                and self.spus[leader].dispatcher.leader(p.name) is not None
                for p in parts
            )

        await until(ready, what=f"topic {name} online")
