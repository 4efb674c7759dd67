"""A minimal retrying producer for process tests: finds the leader, retries the same frame.

The client library (written in parallel) does this for real; here a test needs only
"send this frame until some leader acknowledges it", re-resolving the leader through the
SC after ``NotLeaderError`` or a dropped connection, as any client must after failover.
"""

from __future__ import annotations

import asyncio
import time

from spark_stream.errors import FluvioError
from spark_stream.net.connection import Connection
from spark_stream.protocol import Acks, ProduceRequest, ProduceResponse
from tests.harness.processes import ProcessCluster


class RetryingProducer:
    """Sends frames to a partition's current leader, retrying retriable failures."""

    def __init__(self, cluster: ProcessCluster, topic: str, partition: int) -> None:
        self.cluster = cluster
        self.topic = topic
        self.partition = partition
        self.leader: int | None = None
        self.conn: Connection | None = None
        self.retries = 0

    async def send(
        self, frame: bytes, acks: Acks = Acks.ALL, within: float = 40.0
    ) -> ProduceResponse:
        """Produce ``frame`` until acknowledged; raise non-retriable errors at once."""
        deadline = time.monotonic() + within
        while True:
            try:
                conn = await self._connection()
                reply = await conn.call(
                    ProduceRequest(self.topic, self.partition, acks, 3000, frame), timeout=10
                )
                assert isinstance(reply, ProduceResponse)
                return reply
            except FluvioError as exc:
                if not exc.retriable or time.monotonic() > deadline:
                    raise
                self.retries += 1
                await self._forget()
                await asyncio.sleep(0.05)  # retry back-off

    async def _connection(self) -> Connection:
        if self.conn is None or self.conn.closed:
            name = f"{self.topic}-{self.partition}"
            self.leader = await self.cluster.leader_of(name, timeout=10)
            self.conn = await self.cluster.connect(self.leader)
        return self.conn

    async def _forget(self) -> None:
        if self.conn is not None:
            await self.conn.close()
        self.conn = None
