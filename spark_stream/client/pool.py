"""Connections to SPU leaders, one per endpoint, shared by producers and consumers.

A ``Connection`` multiplexes requests and streams, so one socket per SPU is enough.
``get`` opens a connection on first use (concurrent callers share one attempt) and
replaces a closed one; ``discard`` drops a connection a caller saw fail, so the next
``get`` reconnects. ``close`` closes them all.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from spark_stream.client.metadata import Leader
from spark_stream.errors import ClientClosedError, ConnectionClosedError, FluvioError
from spark_stream.net.connection import Connection

__all__ = ["ConnectionPool"]

log = logging.getLogger(__name__)


class ConnectionPool:
    """Pooled connections to SPUs.

    Args:
        connect_timeout: bound on opening one connection.
        tls: connect over TLS with this context; None: plaintext.
        token: the client token each connection presents (None: none).
    """

    def __init__(
        self,
        connect_timeout: float = 5.0,
        tls: ssl.SSLContext | None = None,
        token: str | None = None,
    ) -> None:
        self._timeout = connect_timeout
        self._tls = tls
        self._token = token
        self._conns: dict[tuple[str, int], Connection] = {}
        self._opening: dict[tuple[str, int], asyncio.Future[Connection]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    async def get(self, leader: Leader) -> Connection:
        """An open connection to ``leader``'s public endpoint.

        Raises:
            ConnectionClosedError: the SPU is unreachable, or the pool is closed.
        """
        if self._closed:
            raise ClientClosedError("the client is closed")
        key = (leader.host, leader.port)
        conn = self._conns.get(key)
        if conn is not None and not conn.closed:
            return conn
        pending = self._opening.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        log.info("connecting to SPU %d at %s:%d", leader.spu_id, leader.host, leader.port)
        try:
            conn = await Connection.open(
                leader.host,
                leader.port,
                timeout=self._timeout,
                name=f"spu-{leader.spu_id}@{leader.host}:{leader.port}",
                tls=self._tls,
                token=self._token,
            )
        except BaseException as exc:
            future.set_exception(
                exc
                if isinstance(exc, FluvioError)  # typed: e.g. a refused token stays one
                else ConnectionClosedError(f"cannot connect to SPU {leader.spu_id}: {exc}")
            )
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        finally:
            self._opening.pop(key, None)
        if self._closed:
            await conn.close()
            raise ClientClosedError("the client is closed")
        self._conns[key] = conn
        future.set_result(conn)
        return conn

    def discard(self, conn: Connection) -> None:
        """Forget ``conn`` (a caller saw it fail); it is closed in the background."""
        for key, known in list(self._conns.items()):
            if known is conn:
                del self._conns[key]
        if not conn.closed:
            task = asyncio.get_running_loop().create_task(conn.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every connection. Idempotent."""
        self._closed = True
        conns, self._conns = list(self._conns.values()), {}
        await asyncio.gather(
            *(c.close() for c in conns), *list(self._closing), return_exceptions=True
        )
