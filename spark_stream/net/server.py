"""The asyncio TCP server base shared by the SC and SPU servers.

Theory of operation. ``Server`` listens on one address and runs a ``_Session`` per
accepted connection. A session's read loop feeds bytes to a ``FrameDecoder`` and turns
each request frame into a task that calls the handler registered for its api key in
the dispatch table, then writes the reply under the request's correlation id, so
replies go out as handlers finish (out of order). A handler returns one reply, or an
async iterator of pushes when the client opened a stream; pushes are sent only while
the client has granted credit, and a cancel frame stops the iterator.

Failures stay local: a typed ``FluvioError`` from a handler becomes an error reply with
its code, any other exception is logged and becomes a generic error reply, malformed
meta or an unknown api/version gets an error reply, and a frame whose header cannot be
read gets a connection-level error (correlation id 0) and closes that connection only.
``stop()`` stops listening, closes every connection and waits for their handlers.

Memory. Each request frame is charged to a ``RequestBudget`` (one per process, shared by
its servers) from its header until its handler is done; a connection whose next frame
does not fit stops reading until bytes are released (see ``spark_stream.net.budget``).

TLS. With ``tls`` set the server accepts through ``TlsListener`` (``_tls_listener``):
a plaintext client gets a ``TlsError`` frame and is closed, a TLS one gets the handshake
and then the same session; under mutual TLS a session whose client sent no certificate is
refused with a ``TlsError`` before any request is handled, and the verified certificate is
in ``ConnContext.peer_certificate``.

Replies whose tail holds a large ``FileRegion`` (a fetch answered from a log segment)
go out with ``sendfile``: the kernel moves the file's pages to the socket with no copy
through Python (not under TLS, which encrypts in user space: the region is written from
memory). One such frame is sent at a time per connection; other replies written
meanwhile wait in order behind it, and a frame once begun is always finished, even if
its handler is cancelled, so the byte stream never tears.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import ssl
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeGuard

from spark_stream.errors import (
    FluvioError,
    InvalidRequestError,
    RecordTooLargeError,
    TlsError,
    UnsupportedVersionError,
)
from spark_stream.net._sockets import READ_CHUNK, STREAM_LIMIT, close_writer, write_parts
from spark_stream.net._tls_listener import TlsListener
from spark_stream.net.budget import RequestBudget
from spark_stream.net.tls import requires_client_cert
from spark_stream.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    ApiKey,
    Encoded,
    ErrorReply,
    FileRegion,
    Frame,
    FrameDecoder,
    FrameKind,
    Message,
    OversizedFrame,
    Request,
    Tail,
    TailPart,
    api_name,
    decode_meta,
    encode_frame,
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
LINGER_SECONDS = 1.0
LINGER_BYTES = 1 << 20
SENDFILE_MIN_BYTES = 64 * 1024
"""File regions at least this large go out with ``sendfile``; smaller ones are cheaper
to write from memory."""


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
    _session: _Session | None = field(default=None, repr=False)

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
        self._sessions: set[_Session] = set()
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
            self._server = await asyncio.start_server(
                self._accept, self.host, self._requested_port, limit=STREAM_LIMIT
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
        session = _Session(self, ctx, reader, writer)
        self._sessions.add(session)
        try:
            await session.run()
        finally:
            self._sessions.discard(session)
            self._session_tasks.discard(task)


async def _maybe_await(value: Awaitable[None] | None) -> None:
    if inspect.isawaitable(value):
        await value


class _Session:
    """One accepted connection: read loop, handler tasks, stream credit."""

    def __init__(
        self,
        server: Server,
        ctx: ConnContext,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.server = server
        self.ctx = ctx
        ctx._session = self
        self.reader = reader
        self.writer = writer
        self.decoder = FrameDecoder(server.max_frame_size)
        self.budget = server.budget
        self.reserved: int | None = None  # bytes held for the frame ``decoder.pending`` begins
        self.waiting: asyncio.Future[None] | None = None  # a wait for budget bytes
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.credit: dict[int, _Credit] = {}
        self.slots = asyncio.Semaphore(server.max_in_flight)
        self.closing = False
        self.close_after_reply: set[asyncio.Task[Any]] = set()
        self.sending_file = asyncio.Lock()
        self.sends: set[asyncio.Future[None]] = set()  # shielded frame sends, ended by close()
        # While a frame is half sent (its file region in flight), other writes queue here.
        self.held: list[TailPart] | None = None

    def close(self) -> None:
        """Close the socket (queued bytes are flushed) and cancel every handler."""
        if not self.closing:
            self.closing = True
            self.writer.close()
            if self.waiting is not None:
                self.waiting.cancel()
            current = asyncio.current_task()
            for task in [*self.tasks.values(), *self.sends]:
                if task is not current:
                    task.cancel()

    def request_close(self) -> None:
        current = asyncio.current_task()
        if current is not None and current in self.tasks.values():
            self.close_after_reply.add(current)
        else:
            self.close()

    async def run(self) -> None:
        cause: BaseException | None = None
        try:
            tls = self.server.tls
            if tls is not None and requires_client_cert(tls) and not self.ctx.peer_certificate:
                raise TlsError(
                    f"{self.server.name} requires a client certificate (mutual TLS) and the "
                    "client sent none: give the client 'cert' and 'key' (tls.cert, tls.key)"
                )
            if self.server.on_connect is not None:
                await _maybe_await(self.server.on_connect(self.ctx))
            log.debug(
                "connection open server=%s conn=%d peer=%s",
                self.server.name,
                self.ctx.id,
                self.ctx.peer,
            )
            while not self.closing and await self._receive():
                pass
        except FluvioError as exc:  # a corrupt frame, or on_connect refused the peer
            cause = exc
            log.warning(
                "closing connection server=%s conn=%d peer=%s error=%r",
                self.server.name,
                self.ctx.id,
                self.ctx.peer,
                exc,
            )
            self._write_error(0, 0, exc)  # correlation id 0: about the whole connection
            await self._linger()
        except (OSError, ConnectionError) as exc:
            cause = exc
        except Exception as exc:
            cause = exc
            log.exception("connection failed server=%s conn=%d", self.server.name, self.ctx.id)
        finally:
            self.close()
            if self.reserved is not None:  # a frame the peer never finished sending
                self.budget.release(self.reserved)
                self.reserved = None
            tasks = list(self.tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await close_writer(self.writer)
            self.budget.trim_soon()  # this connection's read buffers are free now
            await self._disconnected(cause)

    async def _receive(self) -> bool:
        """Read once and act on every frame that completes; False at end of input.

        A method of its own so that no local outlives it: a frame (or the chunk it came
        in) kept alive by the read loop while it waits for budget is memory no budget
        counts.
        """
        if self.reserved is None and (pending := self.decoder.pending) is not None:
            # The whole frame is reserved before its body is read: reading stops here
            # while the budget is spent, and never holds half a frame.
            if not await self._hold(pending.frame_length):
                return False
            self.reserved = pending.frame_length
        data = await self.reader.read(max(READ_CHUNK, self.decoder.bytes_needed()))
        if not data:
            return False
        for event in self.decoder.feed(data):
            if self.closing:
                return False
            if isinstance(event, OversizedFrame):
                self._oversized(event)
                continue
            charged = await self._charge(event)
            if charged is None:
                return False
            await self._on_frame(event, charged)
        return True

    async def _linger(self) -> None:
        """Half-close and drain what the peer still sends, so it reads our error reply.

        Closing a socket with unread input makes the kernel send a reset, which can
        destroy the reply before the peer reads it. Bounded by ``LINGER_SECONDS`` and
        ``LINGER_BYTES``.
        """
        with contextlib.suppress(OSError, ConnectionError, RuntimeError, TimeoutError):
            if self.writer.can_write_eof():
                self.writer.write_eof()
            async with asyncio.timeout(LINGER_SECONDS):
                discarded = 0
                while discarded < LINGER_BYTES and (data := await self.reader.read(65536)):
                    discarded += len(data)

    async def _disconnected(self, cause: BaseException | None) -> None:
        log.debug(
            "connection closed server=%s conn=%d cause=%r", self.server.name, self.ctx.id, cause
        )
        if self.server.on_disconnect is None:
            return
        try:
            await _maybe_await(self.server.on_disconnect(self.ctx, cause))
        except Exception:
            log.exception(
                "on_disconnect hook failed server=%s conn=%d", self.server.name, self.ctx.id
            )

    def _oversized(self, event: OversizedFrame) -> None:
        header = event.header
        if header.kind is FrameKind.REQUEST:
            self._write_error(
                header.api_key,
                header.correlation_id,
                RecordTooLargeError(
                    f"{api_name(header.api_key)} request of {header.frame_length} bytes passes "
                    f"max_frame_size {event.limit}"
                ),
            )

    async def _charge(self, frame: Frame) -> int | None:
        """The bytes held for ``frame``: its reservation, or taken now (it came whole).

        None when the connection closed while waiting.
        """
        if self.reserved is not None:
            charged, self.reserved = self.reserved, None
            return charged
        return frame.header.frame_length if await self._hold(frame.header.frame_length) else None

    async def _hold(self, n: int) -> bool:
        """Take ``n`` bytes from the budget, waiting while it is spent; False if closed.

        The wait is its own future so ``close()`` can end it without cancelling the read
        loop (which still has to clean up).
        """
        if self.budget.try_acquire(n):
            return True  # the common case: no task, no wait
        waiting = self.waiting = asyncio.ensure_future(self.budget.acquire(n))
        try:
            await asyncio.wait([waiting])
        except asyncio.CancelledError:
            waiting.cancel()
            raise
        finally:
            self.waiting = None
        if waiting.cancelled():
            return False
        waiting.result()
        if self.closing:
            self.budget.release(n)
            return False
        return True

    async def _on_frame(self, frame: Frame, charged: int) -> None:
        """Act on one frame; its ``charged`` bytes go back when its handler is done."""
        try:
            task = await self._dispatch(frame)
        except BaseException:
            self.budget.release(charged)
            raise
        if task is None:
            self.budget.release(charged)
        else:
            task.add_done_callback(lambda _task: self.budget.release(charged))

    async def _dispatch(self, frame: Frame) -> asyncio.Task[None] | None:
        """Start a request's handler (returned), or apply a credit or cancel frame."""
        header = frame.header
        cid = header.correlation_id
        if header.kind is FrameKind.REQUEST:
            if cid in self.tasks:
                self._write_error(
                    header.api_key,
                    cid,
                    InvalidRequestError(
                        f"correlation id {cid} is already in use on this connection"
                    ),
                )
                return None
            if header.is_stream:
                if len(self.credit) >= self.server.max_streams:
                    self._write_error(
                        header.api_key,
                        cid,
                        InvalidRequestError(
                            f"too many open streams (limit {self.server.max_streams})"
                        ),
                    )
                    return None
                self.credit[cid] = _Credit()
            else:
                await self.slots.acquire()  # pauses reading while too many requests run
                if self.closing:
                    self.slots.release()
                    return None
            task = asyncio.create_task(self._handle(frame))
            self.tasks[cid] = task
            task.add_done_callback(lambda _task: self._done(cid, header.is_stream))
            return task
        elif header.kind is FrameKind.CREDIT:
            if (credit := self.credit.get(cid)) is not None:
                try:
                    credit.grant(decode_meta(frame.meta).get("credit"))
                except InvalidRequestError as exc:
                    self._write_error(header.api_key, cid, exc)
                    self._cancel(cid)
        elif header.kind is FrameKind.CANCEL:
            self._cancel(cid)
        else:
            log.debug(
                "ignoring %s frame from a client server=%s conn=%d",
                header.kind.name,
                self.server.name,
                self.ctx.id,
            )
        return None

    def _cancel(self, cid: int) -> None:
        if (task := self.tasks.get(cid)) is not None:
            task.cancel()

    def _done(self, cid: int, stream: bool) -> None:
        self.tasks.pop(cid, None)
        if stream:
            self.credit.pop(cid, None)
        else:
            self.slots.release()

    async def _handle(self, frame: Frame) -> None:
        header = frame.header
        api_key, cid = header.api_key, header.correlation_id
        began = time.perf_counter()
        try:
            route = self.server.routes.get(api_key)
            if route is None:
                raise UnsupportedVersionError(f"{api_name(api_key)} is not served here")
            if not route.min_version <= header.version <= route.max_version:
                raise UnsupportedVersionError(
                    f"{api_name(api_key)} version {header.version} is not supported "
                    f"(this server speaks {route.min_version}..{route.max_version})"
                )
            request = Request(
                api_key,
                header.version,
                decode_meta(frame.meta),
                frame.tail,
                cid,
                header.is_stream,
            )
            outcome = route.handler(request, self.ctx)
            result = await outcome if isinstance(outcome, Awaitable) else outcome
            if isinstance(result, AsyncIterable):
                await self._stream(request, result)
            elif header.is_stream:
                await self._reply(FrameKind.PUSH, api_key, cid, result)
                await self._reply(FrameKind.END, api_key, cid, None)
            else:
                await self._reply(FrameKind.RESPONSE, api_key, cid, result)
        except asyncio.CancelledError:
            return  # cancelled by the client or by stop(); nobody waits for a reply
        except _ConnectionGone:
            return  # the read loop reports the closed connection
        except FluvioError as exc:
            self._write_error(api_key, cid, exc)
        except Exception as exc:
            log.exception(
                "handler failed server=%s conn=%d api=%s",
                self.server.name,
                self.ctx.id,
                api_name(api_key),
            )
            self._write_error(api_key, cid, exc)
        finally:
            if self.server.on_request is not None and not header.is_stream:
                self.server.on_request(api_key, time.perf_counter() - began)
            task = asyncio.current_task()
            if task in self.close_after_reply:
                self.close_after_reply.discard(task)
                self.close()

    async def _stream(self, request: Request, items: AsyncIterable[Reply]) -> None:
        api_key, cid = request.api_key, request.correlation_id
        try:
            if not request.stream:
                raise InvalidRequestError(
                    f"{api_name(api_key)} answers with a stream; open it with stream()"
                )
            credit = self.credit[cid]
            async for item in items:
                await credit.take()
                await self._reply(FrameKind.PUSH, api_key, cid, item)
            await self._reply(FrameKind.END, api_key, cid, None)
        finally:
            aclose = getattr(items, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    async def _reply(self, kind: FrameKind, api_key: int, cid: int, reply: Reply) -> None:
        meta, tail, key, version = _unpack(reply, api_key)
        parts = encode_frame(
            kind,
            key,
            cid,
            meta,
            tail,
            version=version,
            max_frame_size=self.server.max_frame_size,
        )
        try:
            if self.server.tls is None and any(_sendable(part) for part in parts):
                # (TLS encrypts in user space: a file region is written from memory.)
                # Shielded: a cancelled handler must not leave a torn frame on the wire.
                sending = asyncio.ensure_future(self._write_with_files(parts))
                self.sends.add(sending)
                sending.add_done_callback(self._sent)
                await asyncio.shield(sending)
            else:
                self._write(parts)
            await self.writer.drain()
        except (OSError, ConnectionError) as exc:
            raise _ConnectionGone from exc

    async def _write_with_files(self, parts: list[TailPart]) -> None:
        """Send one frame, its large file regions with ``sendfile``, others waiting behind."""
        async with self.sending_file:
            if self.writer.is_closing():
                return
            self.held = []
            try:
                for part in parts:
                    if _sendable(part):
                        await self._sendfile(part)
                    else:
                        write_parts(self.writer, [part])
            except (OSError, ConnectionError, RuntimeError) as exc:
                self.close()  # a torn frame: nothing more can be sent on this connection
                raise ConnectionResetError("the connection failed mid-reply") from exc
            finally:
                held, self.held = self.held, None
                if held and not self.writer.is_closing():
                    write_parts(self.writer, held)

    async def _sendfile(self, region: FileRegion) -> None:
        """``sendfile`` the region; a transport that cannot gets its bytes (a TLS server
        never comes here: asyncio refuses it with a RuntimeError, not this fallback)."""
        loop = asyncio.get_running_loop()
        length = memoryview(region.data).nbytes
        try:
            # typeshed wants an IO[bytes]; with fallback=False asyncio only calls fileno().
            await loop.sendfile(
                self.writer.transport,
                region,  # type: ignore[arg-type]
                region.position,
                length,
                fallback=False,
            )
        except asyncio.SendfileNotAvailableError:
            self.writer.write(region.data)

    def _write_error(self, api_key: int, cid: int, exc: BaseException) -> None:
        meta = ErrorReply.from_error(exc).to_meta()
        self._write(encode_frame(FrameKind.ERROR, api_key, cid, meta))

    def _sent(self, sending: asyncio.Future[None]) -> None:
        """Forget a finished frame send; its failure is seen here (its handler may be
        gone, and the connection is already closing)."""
        self.sends.discard(sending)
        if not sending.cancelled():
            sending.exception()

    def _write(self, parts: list[TailPart]) -> None:
        if self.held is not None:
            self.held.extend(parts)  # a frame is half sent; these follow it
        elif not self.writer.is_closing():
            write_parts(self.writer, parts)


def _sendable(part: TailPart) -> TypeGuard[FileRegion]:
    """A tail part worth sending with ``sendfile``."""
    if isinstance(part, bytes | bytearray | memoryview):
        return False  # the common case, before the runtime Protocol check (~10 us a part)
    return isinstance(part, FileRegion) and memoryview(part.data).nbytes >= SENDFILE_MIN_BYTES


def _unpack(reply: Reply, api_key: int) -> tuple[dict[str, Any] | bytes, Tail, int, int]:
    """Meta, tail, api key and version of a handler's reply (pushes may name their kind)."""
    if reply is None:
        return {}, b"", api_key, 0
    if isinstance(reply, Message):
        return reply.to_meta(), reply.tail_parts(), reply.API_KEY, reply.wire_version()
    if isinstance(reply, Encoded):
        return reply.meta, b"", reply.api_key, reply.version
    if isinstance(reply, dict):
        return reply, b"", api_key, 0
    if isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], dict):
        return reply[0], reply[1], api_key, 0
    raise TypeError(f"a handler returned {type(reply).__name__}; expected a Reply")


class _ConnectionGone(Exception):
    """Writing a reply failed because the peer is gone."""


class _Credit:
    """How many pushes the client still accepts on one stream."""

    def __init__(self) -> None:
        self.available = 0
        self._event = asyncio.Event()

    def grant(self, n: object) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidRequestError(f"stream credit must be a positive integer, got {n!r}")
        self.available += n
        self._event.set()

    async def take(self) -> None:
        while self.available == 0:
            self._event.clear()
            await self._event.wait()
        self.available -= 1
