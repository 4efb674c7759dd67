"""The asyncio TCP server base shared by the SC and SPU servers.

Theory of operation. ``Server`` listens on one address, holds the dispatch table
(api key -> ``Route``) and runs a ``Session`` (``_session``) per accepted connection. A
session turns each request frame into a task that calls the handler registered for its
api key and writes the reply under the request's correlation id, so replies go out as
handlers finish (out of order). A handler returns one reply, or an async iterator of
pushes when the client opened a stream; pushes are sent only while the client has
granted credit, and a cancel frame stops the iterator.

Failures stay local: a typed ``FluvioError`` from a handler becomes an error reply with
its code, any other exception is logged and becomes a generic error reply, malformed
meta or an unknown api/version gets an error reply, and a frame whose header cannot be
read gets a connection-level error (correlation id 0) and closes that connection only.
``stop()`` stops listening, closes every connection and waits for their handlers.

Memory. Each request frame is charged to a ``RequestBudget`` (one per process, shared by
its servers) until its handler is done (see ``_session`` and ``spark_stream.net.budget``).

TLS. With ``tls`` set the server accepts through ``TlsListener`` (``_tls_listener``):
a plaintext client gets a ``TlsError`` frame and is closed, a TLS one gets the handshake
and then the same session; under mutual TLS a session whose client sent no certificate is
refused with a ``TlsError`` before any request is handled, and the verified certificate is
in ``ConnContext.peer_certificate``. Large file regions in replies go out with
``sendfile`` when not under TLS (see ``_session``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from spark_stream.net._chunk_reader import ChunkReader, chunk_reader_of
from spark_stream.net._session import Session
from spark_stream.net._tls_listener import TlsListener
from spark_stream.net.budget import RequestBudget
from spark_stream.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    ApiKey,
    Encoded,
    Message,
    Request,
    Tail,
)

__all__ = ["Server", "Route", "ConnContext", "Handler", "RequestHook", "Reply", "Stream"]

log = logging.getLogger(__name__)

Reply = Message | Encoded | dict[str, Any] | tuple[dict[str, Any], Tail] | None
"""What a handler returns (or yields per push): a typed message, one already encoded
(the same bytes fanned out to many streams), a meta dict, or both a meta dict and a
tail; None means an empty reply."""

Stream = AsyncIterator[Reply]
"""What a streaming handler produces: one push per item."""

Handler = Callable[["Request", "ConnContext"], Awaitable[Reply | Stream] | Stream]
"""A request handler: an ``async def`` returning a reply, or returning a stream (after
checks that answer with an error before the stream opens), or an async generator."""
ConnectHook = Callable[["ConnContext"], Awaitable[None] | None]
DisconnectHook = Callable[["ConnContext", BaseException | None], Awaitable[None] | None]
RequestHook = Callable[[int, float], None]
"""Called after each (non-stream) request is answered, with its api key and the seconds
from its frame's arrival to its reply being queued: the latency histograms' feed."""

DEFAULT_MAX_IN_FLIGHT = 64
DEFAULT_MAX_STREAMS = 256


@dataclass(frozen=True, slots=True)
class Route:
    """A handler and the versions of its api it accepts."""

    handler: Handler
    min_version: int = 0
    max_version: int = 0


@dataclass(eq=False)
class ConnContext:
    """Per-connection state handed to every handler and hook.

    Attributes:
        id: unique per server, in accept order.
        peer: the remote address as ``host:port``.
        state: free for the application, e.g. the SC stores the SPU id that authenticated.
        peer_certificate: the client's verified TLS certificate (``getpeercert()``: its
            subject, SANs...) on a TLS server that asked for one; None otherwise.
    """

    id: int
    peer: str
    peer_certificate: dict[str, Any] | None = None
    opened_at: float = field(default_factory=time.monotonic)
    state: dict[str, Any] = field(default_factory=dict)
    _session: Session | None = field(default=None, repr=False)

    @property
    def closed(self) -> bool:
        """True once the connection is closing."""
        return self._session is None or self._session.closing

    def close(self) -> None:
        """Close this connection; called from a handler, after that handler's reply is sent.

        Bytes already queued are flushed first, so a handler may raise a typed error (e.g.
        ``UnauthorizedError``) after calling this and the peer still receives the reply.
        """
        if self._session is not None:
            self._session.request_close()


class Server:
    """An asyncio TCP server dispatching protocol requests to handlers by api key.

    Args:
        handlers: the dispatch table; a bare handler accepts version 0 only.
        host: address to bind (loopback by default).
        port: port to bind; 0 picks a free one (read it from ``port`` after ``start``).
        name: used in log lines.
        max_frame_size: larger requests get ``RecordTooLargeError`` and are skipped.
        max_in_flight: per connection, requests handled at once before reading pauses.
        max_streams: per connection, open streams before new ones are refused.
        on_connect: called with the context of each new connection; raising closes it.
        on_disconnect: called once per connection when it closes, with the cause.
        on_request: called with (api key, seconds) after each request's reply; streams
            are not timed (they last as long as the client keeps them).
        budget: the process's budget for request bytes held in memory, shared by its
            servers; None gives this server a budget of its own of the default size.
        tls: serve TLS with this context (``TlsConfig.server_context()``); a plaintext
            client then gets a ``TlsError`` frame and is closed. None: plaintext.
    """

    def __init__(
        self,
        handlers: Mapping[int, Handler | Route],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str = "server",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_streams: int = DEFAULT_MAX_STREAMS,
        on_connect: ConnectHook | None = None,
        on_disconnect: DisconnectHook | None = None,
        on_request: RequestHook | None = None,
        budget: RequestBudget | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.routes: dict[int, Route] = {
            int(key): h if isinstance(h, Route) else Route(h) for key, h in handlers.items()
        }
        self.routes.setdefault(int(ApiKey.API_VERSIONS), Route(self._api_versions))
        self.host = host
        self._requested_port = port
        self.name = name
        self.max_frame_size = max_frame_size
        self.max_in_flight = max_in_flight
        self.max_streams = max_streams
        self.on_connect = on_connect
        self.on_disconnect = on_disconnect
        self.on_request = on_request
        self.budget = budget if budget is not None else RequestBudget()
        self.tls = tls
        self._server: asyncio.Server | None = None
        self._tls_listener: TlsListener | None = None
        self._sessions: set[Session] = set()
        self._session_tasks: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)
        self.port = 0

    @property
    def connections(self) -> list[ConnContext]:
        """Contexts of the connections open now."""
        return [s.ctx for s in self._sessions]

    async def start(self) -> Self:
        """Bind and start accepting connections; ``port`` holds the bound port after.

        Raises:
            RuntimeError: the server is already started.
        """
        if self._server is not None or self._tls_listener is not None:
            raise RuntimeError(f"server {self.name} is already started")
        if self.tls is not None:
            self._tls_listener = TlsListener(self.tls, self._accept, self.name)
            self.port = await self._tls_listener.start(self.host, self._requested_port)
        else:
            self._server = await asyncio.get_running_loop().create_server(
                lambda: ChunkReader(self._accept), self.host, self._requested_port
            )
            self.port = self._server.sockets[0].getsockname()[1]
        log.info(
            "server listening name=%s address=%s:%d tls=%s",
            self.name,
            self.host,
            self.port,
            "on" if self.tls is not None else "off",
        )
        return self

    async def stop(self, grace: float = 5.0) -> None:
        """Stop listening, close every connection, and wait for their handlers to finish.

        Args:
            grace: seconds to let connections wind down before their tasks are cancelled.
        """
        listening = self._server is not None or self._tls_listener is not None
        if self._server is not None:
            self._server.close()
        if self._tls_listener is not None:
            await self._tls_listener.close()
            self._tls_listener = None
        for session in list(self._sessions):
            session.close()
        if self._session_tasks:
            _, late = await asyncio.wait(set(self._session_tasks), timeout=grace)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        if listening:
            log.info("server stopped name=%s", self.name)

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _api_versions(self, request: Request, ctx: ConnContext) -> Reply:
        return {"apis": [[k, r.min_version, r.max_version] for k, r in sorted(self.routes.items())]}

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._session_tasks.add(task)
        peer = writer.get_extra_info("peername")
        ctx = ConnContext(
            next(self._ids),
            f"{peer[0]}:{peer[1]}" if peer else "?",
            peer_certificate=writer.get_extra_info("peercert") or None,
        )
        session = Session(self, ctx, chunk_reader_of(writer), writer)
        self._sessions.add(session)
        try:
            await session.run()
        finally:
            self._sessions.discard(session)
            self._session_tasks.discard(task)
