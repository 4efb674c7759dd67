"""The accepting end of a TLS port: the handshake, and a clear refusal of plaintext.

Theory of operation. ``TlsListener`` owns the listening socket and accepts connections
itself (``asyncio.start_server(ssl=...)`` would start the handshake on whatever the peer
sends). It peeks at the first byte of each connection without consuming it: a TLS
ClientHello starts with 0x16, a plaintext frame with the high byte of its length (far
below it). A TLS peer gets the handshake (bounded by ``HANDSHAKE_TIMEOUT``) and then the
server's usual session on a ``ChunkReader``/``StreamWriter`` pair; a plaintext peer gets
one plaintext connection-level error frame (``TlsError``: "this port speaks TLS") and
the connection closes, so a misconfigured client fails at once with the reason instead
of waiting for a reply that never comes. A failed handshake (an untrusted or missing
client certificate) is logged and closes that connection only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable

from spark_stream.errors import TlsError
from spark_stream.net._chunk_reader import ChunkReader
from spark_stream.net._tls_transport import TlsSocketTransport, handshake, wrap_tls
from spark_stream.net.tls import TLS_RECORD_HANDSHAKE, describe_tls_error
from spark_stream.protocol import ErrorReply, FrameKind, as_buffer, encode_frame

__all__ = ["TlsListener", "HANDSHAKE_TIMEOUT"]

log = logging.getLogger("spark_stream.net.server")

HANDSHAKE_TIMEOUT = 10.0
"""Seconds a new connection has to send its first byte and finish the TLS handshake."""
_REFUSAL_LINGER = 1.0
"""Seconds a refused plaintext peer's request is drained, so it reads the error frame
(closing with unread input would reset the connection and lose it)."""

StreamCallback = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class TlsListener:
    """Accept TLS connections on ``host:port`` and run ``on_stream`` for each.

    Args:
        context: the server's TLS context (``TlsConfig.server_context()``).
        on_stream: the session of one connection, once its handshake is done.
        name: the server's name, for log lines and the refusal message.
    """

    def __init__(self, context: ssl.SSLContext, on_stream: StreamCallback, name: str) -> None:
        self.context = context
        self.on_stream = on_stream
        self.name = name
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._handshakes: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        """Bind, listen and start accepting; the bound port."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, address = infos[0]
        sock = socket.create_server(address, family=family, backlog=128)
        sock.setblocking(False)
        self._sock = sock
        self._accepting = loop.create_task(self._accept_loop(sock), name=f"{self.name}-accept")
        return int(sock.getsockname()[1])

    async def close(self) -> None:
        """Stop accepting; connections still in their handshake are dropped."""
        tasks = [t for t in (self._accepting, *self._handshakes) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as exc:  # e.g. out of file descriptors: keep serving the rest
                log.warning("accept failed server=%s error=%r", self.name, exc)
                await asyncio.sleep(0.1)
                continue
            conn.setblocking(False)
            task = loop.create_task(self._open(conn))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _open(self, conn: socket.socket) -> None:
        """Sniff, handshake, then hand the streams to the session (which owns them)."""
        peer = _peer(conn)
        try:
            async with asyncio.timeout(HANDSHAKE_TIMEOUT):
                first = await _peek(conn)
                if first and first[0] != TLS_RECORD_HANDSHAKE:
                    await _refuse_plaintext(conn, self.name)
                    log.warning("refused a plaintext connection server=%s peer=%s", self.name, peer)
                    return
                if not first:
                    conn.close()
                    return
                reader, writer = await _handshake(conn, self.context)
        except (OSError, TimeoutError) as exc:
            conn.close()
            reason = (
                describe_tls_error(exc, server_side=True)
                if isinstance(exc, ssl.SSLError)
                else repr(exc)
            )
            log.warning("TLS handshake failed server=%s peer=%s: %s", self.name, peer, reason)
            return
        except BaseException:
            conn.close()
            raise
        task = asyncio.current_task()
        if task is not None:
            self._handshakes.discard(task)  # the session is the server's from here on
        await self.on_stream(reader, writer)


def _peer(conn: socket.socket) -> str:
    try:
        host, port, *_ = conn.getpeername()
    except OSError:
        return "?"
    return f"{host}:{port}"


async def _peek(conn: socket.socket) -> bytes:
    """The connection's first byte, left in the socket for the handshake to read."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            return conn.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            await _readable(loop, conn)


async def _readable(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    """Wait until ``conn`` has input (or its peer closed it)."""
    readable: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(conn.fileno(), ready)
    try:
        await readable
    finally:
        loop.remove_reader(conn.fileno())


async def _handshake(
    conn: socket.socket, context: ssl.SSLContext
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    sock = wrap_tls(conn, context)
    try:
        await handshake(sock)
    except BaseException:
        sock.close()
        raise
    protocol = ChunkReader()
    transport = TlsSocketTransport(loop, sock, protocol)
    return protocol.reader, asyncio.StreamWriter(transport, protocol, protocol.reader, loop)


async def _refuse_plaintext(conn: socket.socket, name: str) -> None:
    """Answer a plaintext peer with one error frame, in plaintext, and close."""
    loop = asyncio.get_running_loop()
    err = TlsError(
        f"{name} speaks TLS on this port and the client connected without TLS: "
        "give the client the cluster's CA (tls.ca / the profile's tls) to connect"
    )
    meta = ErrorReply.from_error(err).to_meta()
    frame = b"".join(bytes(as_buffer(part)) for part in encode_frame(FrameKind.ERROR, 0, 0, meta))
    with contextlib.suppress(OSError, TimeoutError):
        await loop.sock_sendall(conn, frame)
        conn.shutdown(socket.SHUT_WR)
        async with asyncio.timeout(_REFUSAL_LINGER):
            while await loop.sock_recv(conn, 65536):
                pass
    conn.close()
