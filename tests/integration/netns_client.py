"""A client process for the network-namespace test: JSON commands in, JSON results out.

The test runs this module with ``ip netns exec NS python -m tests.integration.netns_client
SC_ENDPOINT``, so every byte it sends crosses the namespaces' bridge like a client on
another host. It reads one JSON object a line on stdin and writes one JSON object a line
on stdout (``{"ok": ...}`` or ``{"error": "Type: message"}``); stderr carries logs.

Commands (``op``): ``register_spu``, ``online_spus``, ``create_topic``, ``partitions``
(the SC's view: leader, resolution, live replicas), ``produce`` (the normal producer,
``acks=all``, idempotent; returns which values were acknowledged and why the others
failed), ``read`` (every record of a partition over the network, never the local-file
shortcut: the namespaces share one filesystem), ``probe`` (one raw ``acks=all`` produce
request straight to an SPU address: no SC needed, so it works from a partitioned
namespace), ``quit``. The SC connection is opened at the first command that needs it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from spark_stream.client.fluvio import FluvioAsync
from spark_stream.errors import FluvioError
from spark_stream.net.connection import Connection
from spark_stream.protocol import Acks, ProduceRequest, ProduceResponse
from spark_stream.records import encode_records

Reply = dict[str, Any]


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class NetnsClient:
    """Runs the commands against the SC at ``endpoint``."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._fluvio: FluvioAsync | None = None

    async def fluvio(self) -> FluvioAsync:
        """The client, connected at first use."""
        if self._fluvio is None:
            self._fluvio = await FluvioAsync.connect(self.endpoint, timeout=20)
        return self._fluvio

    async def close(self) -> None:
        """Close the client if it was opened."""
        if self._fluvio is not None:
            await self._fluvio.close()

    async def register_spu(self, cmd: Reply) -> Reply:
        """Register a custom SPU at its namespace's address."""
        admin = (await self.fluvio()).admin()
        await admin.register_spu(
            cmd["id"],
            publicEndpoint={"port": cmd["public_port"], "ingress": [{"ip": cmd["host"]}]},
            privateEndpoint={"port": cmd["private_port"], "host": cmd["host"]},
        )
        return {"ok": True}

    async def online_spus(self, cmd: Reply) -> Reply:
        """The ids the SC lists online."""
        spus = await (await self.fluvio()).admin().list_spus()
        return {"ok": sorted(s.spu_id for s in spus if s.status.is_online)}

    async def create_topic(self, cmd: Reply) -> Reply:
        """Create a topic (the SC assigns replicas)."""
        await (
            (await self.fluvio())
            .admin()
            .create_topic(
                cmd["topic"],
                partitions=cmd["partitions"],
                replication_factor=cmd["replication"],
                min_in_sync_replicas=cmd["min_isr"],
            )
        )
        return {"ok": True}

    async def partitions(self, cmd: Reply) -> Reply:
        """Per partition: leader, resolution, the leader's LEO and its replicas' report.

        ``replicas``: the ids in the leader's report; ``in_sync``: those it lists in sync,
        each with its LEO.
        """
        parts = await (await self.fluvio()).admin().list_partitions(cmd["topic"])
        return {
            "ok": [
                {
                    "name": p.name,
                    "leader": p.status.leader,
                    "resolution": p.status.resolution.value,
                    "leo": p.status.leo,
                    "replicas": sorted(r.spu_id for r in p.status.lrs),
                    "in_sync": {str(r.spu_id): r.leo for r in p.status.lrs if r.in_sync},
                }
                for p in parts
            ]
        }

    async def produce(self, cmd: Reply) -> Reply:
        """Send ``values`` to one partition with ``acks=all``; which were acknowledged."""
        fluvio = await self.fluvio()
        producer = await fluvio.topic_producer(
            cmd["topic"],
            acks="all",
            idempotence=True,
            linger_ms=2,
            retry_backoff_ms=100,
            request_timeout_ms=cmd["timeout_ms"],
            delivery_timeout_ms=cmd["timeout_ms"],
        )
        try:
            futures = [
                (v, await producer.send(None, v.encode(), partition=cmd["partition"]))
                for v in cmd["values"]
            ]
            acked: list[str] = []
            failed: list[list[str]] = []
            for value, future in futures:
                try:
                    await future
                    acked.append(value)
                except FluvioError as exc:
                    failed.append([value, _error(exc)])
        finally:
            await producer.close()
        return {"ok": {"acked": acked, "failed": failed}}

    async def read(self, cmd: Reply) -> Reply:
        """Every committed record of a partition, fetched from its leader."""
        fluvio = await self.fluvio()
        records: list[list[Any]] = []
        async for batch in fluvio.fetch_batches(cmd["topic"], cmd["partition"], 0, local=False):
            offsets = batch.column("offset").to_pylist()
            values = batch.column("value").to_pylist()
            records += [[o, v.decode()] for o, v in zip(offsets, values, strict=True)]
        return {"ok": records}

    async def probe(self, cmd: Reply) -> Reply:
        """One ``acks=all`` produce request straight to the SPU at ``host:port``."""
        conn = await Connection.open(cmd["host"], cmd["port"], timeout=10, name="probe")
        try:
            tail = encode_records(cmd["values"])
            request = ProduceRequest(
                cmd["topic"], cmd["partition"], Acks.ALL, cmd["timeout_ms"], tail
            )
            reply = await conn.call(request, timeout=cmd["timeout_ms"] / 1000 + 10)
            assert isinstance(reply, ProduceResponse)
            return {"ok": {"acked": True, "base_offset": reply.base_offset}}
        except FluvioError as exc:
            return {"ok": {"acked": False, "error": _error(exc)}}
        finally:
            await conn.close()

    async def run(self, cmd: Reply) -> Reply:
        """Dispatch one command."""
        handler = {
            "register_spu": self.register_spu,
            "online_spus": self.online_spus,
            "create_topic": self.create_topic,
            "partitions": self.partitions,
            "produce": self.produce,
            "read": self.read,
            "probe": self.probe,
        }[cmd["op"]]
        return await handler(cmd)


async def main(endpoint: str) -> None:
    """Answer commands from stdin until ``quit`` or end of input."""
    client = NetnsClient(endpoint)
    try:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line or json.loads(line)["op"] == "quit":
                return
            try:
                reply = await client.run(json.loads(line))
            except FluvioError as exc:
                reply = {"error": _error(exc)}
            print(json.dumps(reply), flush=True)
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
