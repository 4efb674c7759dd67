"""One asyncio connection to any peer (client->SC, client->SPU, SPU->SC, SPU->SPU).

Theory of operation. A ``Connection`` owns one TCP stream. Callers send request frames
(``request``, ``call``, ``stream``), each under a fresh correlation id, and wait on a
future (or a ``Stream``) registered under that id. Received frames are routed by
correlation id as they complete: a response or error
completes the request's future, pushes and the end marker go to the stream. Replies may
arrive in any order, so many requests share the connection.

Receiving. A connection made by ``open`` reads through ``FrameReceiver``, a buffered
protocol that has the socket write each large frame body straight into a buffer of its
own, so a reply's tail is a view of the one and only copy of its bytes (headers are
parsed with the decoder's ``classify_header``). A connection built on an existing
``StreamReader`` (e.g. one accepted by a server) feeds its reads to a ``FrameDecoder``.

Streams have credit-based flow control: opening a stream grants the server ``window``
pushes, and the consumer grants more as it takes items, so at most ``window`` pushes
are ever queued and the reader task never blocks on a slow consumer (other requests on
the connection keep flowing). When the connection closes, for any reason, every pending
request and open stream fails with ``ConnectionClosedError`` whose ``__cause__`` is
the reason; ``close()`` is idempotent.

TLS. ``open(tls=context)`` runs the handshake within ``timeout`` and checks the server's
certificate names ``host``; a failure is a ``TlsError`` (not retriable), and so is a
TLS alert or a ``TlsError`` frame from the server later. A TLS connection the server
resets before any reply (the way a client certificate it refuses shows under TLS 1.3)
closes with a ``ConnectionClosedError`` that says so.

All methods must run on the event loop the connection was created on. From another
thread, submit them with ``asyncio.run_coroutine_threadsafe(conn.request(...), loop)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any, Self

from spark_stream.errors import (
    ConnectionClosedError,
    CorruptFrameError,
    FluvioError,
    InvalidRequestError,
    RecordTooLargeError,
    RequestTimeoutError,
    TlsError,
    UnsupportedVersionError,
)
from spark_stream.net._receiver import FrameReceiver
from spark_stream.net._sockets import (
    READ_CHUNK,
    STREAM_LIMIT,
    close_writer,
    reached_itself,
    write_parts,
)
from spark_stream.net._tls_transport import TlsSocketTransport, open_tls_socket
from spark_stream.net.stream import Stream
from spark_stream.net.tls import describe_tls_error, is_tls_error
from spark_stream.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    MAX_CORRELATION_ID,
    ErrorReply,
    Event,
    Frame,
    FrameDecoder,
    FrameFlags,
    FrameKind,
    Message,
    OversizedFrame,
    Push,
    Role,
    Tail,
    api_name,
    decode_meta,
    encode_frame,
    message_type,
)
from spark_stream.protocol.control import AuthenticateRequest

__all__ = ["Connection", "DEFAULT_STREAM_WINDOW"]

log = logging.getLogger(__name__)

DEFAULT_STREAM_WINDOW = 16
RawResponse = tuple[dict[str, Any], memoryview]
"""A response as it arrives: its decoded meta and a view of its raw tail."""


class Connection:
    """A multiplexed protocol connection over an asyncio (reader, writer) pair.

    Args:
        reader: the stream to read frames from.
        writer: the stream to write frames to (with ``write`` and ``drain``).
        max_frame_size: largest frame accepted or sent; larger replies fail their request
            with ``RecordTooLargeError``.
        name: used in log lines and error messages; defaults to the peer address.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        name: str | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._reader = reader
        self._writer = writer
        self.max_frame_size = max_frame_size
        peer = writer.get_extra_info("peername")
        self.name = name or (f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer))
        self._decoder = FrameDecoder(max_frame_size)
        self._pending: dict[int, asyncio.Future[RawResponse]] = {}
        self._streams: dict[int, Stream] = {}
        self._next_id = 1
        self._close_cause: BaseException | None = None
        self._peer_error: FluvioError | None = None  # sent with correlation id 0
        self._closed = False
        self._tls = writer.get_extra_info("sslcontext") is not None
        self._replied = False  # any frame received: a TLS session the server accepted
        receiver = writer.transport.get_protocol()
        loop_body = (
            self._receive_loop(receiver)
            if isinstance(receiver, FrameReceiver)
            else self._read_loop()
        )
        self._reader_task = self._loop.create_task(loop_body, name=f"conn-{self.name}")

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109 - becomes a typed error, not TimeoutError
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        name: str | None = None,
        tls: ssl.SSLContext | None = None,
        token: str | None = None,
    ) -> Self:
        """Connect to ``host:port`` and start the reader task.

        Args:
            tls: connect over TLS with this context (``TlsConfig.client_context()``);
                the server's certificate must name ``host``. None: plaintext.
            token: a client token, presented (``AUTHENTICATE``) before the connection is
                returned, so every request on it carries that identity; None: none.

        Raises:
            ConnectionClosedError: the peer refused or did not answer within ``timeout``.
            TlsError: the TLS handshake failed (the message says which certificate).
            AuthenticationError: the peer refused the token.
        """
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                reader = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
                receiver = FrameReceiver(reader, max_frame_size, loop)
                transport: asyncio.BaseTransport
                if tls is None:
                    transport, _ = await loop.create_connection(lambda: receiver, host, port)
                else:
                    sock = await open_tls_socket(host, port, tls, server_hostname=host)
                    transport = TlsSocketTransport(loop, sock, receiver)
                writer = asyncio.StreamWriter(transport, receiver, reader, loop)
        except ssl.SSLError as exc:
            raise TlsError(
                f"cannot connect to {host}:{port} over TLS: {describe_tls_error(exc)}"
            ) from exc
        except (OSError, TimeoutError) as exc:
            err = ConnectionClosedError(f"cannot connect to {host}:{port}: {exc or 'timeout'}")
            raise err from exc
        sockname, peername = (transport.get_extra_info(k) for k in ("sockname", "peername"))
        if reached_itself(sockname, peername):
            transport.abort()
            raise ConnectionClosedError(
                f"cannot connect to {host}:{port}: nothing listens there"
                " (the connection reached itself)"
            )
        conn = cls(reader, writer, max_frame_size=max_frame_size, name=name or f"{host}:{port}")
        if token is not None:
            try:
                await conn.call(AuthenticateRequest(token), timeout=timeout)
            except BaseException:
                await conn.close()
                raise
        return conn

    @property
    def closed(self) -> bool:
        """True once the connection is closing or closed; no new request can be sent."""
        return self._closed

    @property
    def in_flight(self) -> int:
        """Requests awaiting a reply plus open streams."""
        return len(self._pending) + len(self._streams)

    async def request(
        self,
        api_key: int,
        meta: dict[str, Any] | None = None,
        tail: Tail = b"",
        *,
        version: int = 0,
        timeout: float | None = None,  # noqa: ASYNC109 - raises RequestTimeoutError
    ) -> RawResponse:
        """Send one request and wait for its reply.

        Returns:
            The reply's meta dict and its raw tail (a memoryview of the received frame).

        Raises:
            FluvioError: the typed error the server replied with.
            RequestTimeoutError: no reply within ``timeout`` seconds (None = wait forever).
            ConnectionClosedError: the connection closed first (``__cause__`` says why).
        """
        cid = self._allocate_id()
        future: asyncio.Future[RawResponse] = self._loop.create_future()
        self._pending[cid] = future
        try:
            async with asyncio.timeout(timeout):
                await self._send(
                    encode_frame(
                        FrameKind.REQUEST,
                        api_key,
                        cid,
                        meta,
                        tail,
                        version=version,
                        max_frame_size=self.max_frame_size,
                    )
                )
                return await future
        except TimeoutError:
            raise RequestTimeoutError(
                f"{api_name(api_key)} to {self.name} got no reply within {timeout}s"
            ) from None
        finally:
            self._pending.pop(cid, None)
            _settle(future)

    async def call(
        self,
        request: Message,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - raises RequestTimeoutError
    ) -> Message:
        """Send a typed request message and decode the reply to its response type.

        Raises:
            UnsupportedVersionError: no response type is registered for the api.
            plus everything ``request`` raises.
        """
        meta, tail = await self.request(
            request.API_KEY,
            request.to_meta(),
            request.tail_parts(),
            version=request.wire_version(),
            timeout=timeout,
        )
        response_type = message_type(request.API_KEY, Role.RESPONSE)
        if response_type is None:
            raise UnsupportedVersionError(f"no response type for {api_name(request.API_KEY)}")
        return response_type.from_meta(meta, tail)

    async def stream(
        self,
        api_key: int | Message,
        meta: dict[str, Any] | None = None,
        tail: Tail = b"",
        *,
        version: int = 0,
        window: int = DEFAULT_STREAM_WINDOW,
    ) -> Stream:
        """Open a stream: send a request that the server answers with pushes.

        ``api_key`` may be a typed request message instead (then ``meta``/``tail`` are
        taken from it). Use the result with ``async with`` so the stream is cancelled on
        the server when the consumer stops early.

        Raises:
            ConnectionClosedError: the connection is closed.
        """
        if isinstance(api_key, Message):
            msg = api_key
            api_key, meta, tail, version = (
                msg.API_KEY,
                msg.to_meta(),
                msg.tail_parts(),
                msg.wire_version(),
            )
        if window < 1:
            raise InvalidRequestError(f"stream window must be >= 1, got {window}")
        cid = self._allocate_id()
        parts = encode_frame(
            FrameKind.REQUEST,
            api_key,
            cid,
            meta,
            tail,
            version=version,
            flags=FrameFlags.STREAM,
            max_frame_size=self.max_frame_size,
        )
        parts += encode_frame(FrameKind.CREDIT, api_key, cid, {"credit": window})
        stream = Stream(self, cid, api_key, window)
        self._streams[cid] = stream
        try:
            await self._send(parts)
        except BaseException:
            self._streams.pop(cid, None)
            raise
        return stream

    async def close(self) -> None:
        """Close the connection, failing whatever is in flight; safe to call many times."""
        self._shutdown(ConnectionClosedError(f"connection to {self.name} closed by this side"))
        if not self._reader_task.done() and self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
        await close_writer(self._writer)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- internals ------------------------------------------------------------------

    def _allocate_id(self) -> int:
        if self._closed:
            raise self._closed_error()
        while True:
            cid = self._next_id
            self._next_id = cid + 1 if cid < MAX_CORRELATION_ID else 1
            if cid not in self._pending and cid not in self._streams:
                return cid

    async def _send(self, parts: list[Any]) -> None:
        if self._closed:
            raise self._closed_error()
        try:
            write_parts(self._writer, parts)
            await self._writer.drain()
        except (OSError, ConnectionError) as exc:
            self._shutdown(exc)
            raise self._closed_error() from exc

    def _send_nowait(self, parts: list[Any]) -> None:
        """Queue a small control frame without waiting for the socket (used from callbacks)."""
        if not self._closed:
            write_parts(self._writer, parts)

    def _closed_error(self) -> ConnectionClosedError | TlsError:
        cause = self._close_cause
        if isinstance(cause, TlsError):
            # Not a closed connection to retry: the certificates or settings must change.
            tls_err = TlsError(f"connection to {self.name} failed: {cause}")
            tls_err.__cause__ = cause.__cause__
            return tls_err
        if isinstance(cause, ConnectionClosedError):
            err = ConnectionClosedError(str(cause))
            err.__cause__ = cause.__cause__
        else:
            reason = f"{type(cause).__name__}: {cause}" if cause is not None else "closed"
            err = ConnectionClosedError(f"connection to {self.name} closed: {reason}")
            err.__cause__ = cause
        return err

    def _shutdown(self, cause: BaseException) -> None:
        """Mark closed, close the socket, fail every pending request and stream with ``cause``."""
        if self._closed:
            return
        self._closed = True
        if not isinstance(cause, FluvioError) and is_tls_error(cause):
            # An alert from the server after this side's handshake was done (TLS 1.3).
            tls_cause = TlsError(describe_tls_error(cause))
            tls_cause.__cause__ = cause
            cause = tls_cause
        elif self._tls and not self._replied and isinstance(cause, ConnectionError):
            # A server refusing this client's certificate under TLS 1.3 does so after the
            # client's handshake ended, and its alert is lost: the client sees a reset.
            hint = ConnectionClosedError(
                f"connection to {self.name} closed: {type(cause).__name__}: {cause} (over "
                "TLS, before any reply: the server may have refused this client's "
                "certificate; the server's log says why)"
            )
            hint.__cause__ = cause
            cause = hint
        self._close_cause = cause
        self._writer.close()
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(self._closed_error())
        streams, self._streams = self._streams, {}
        for stream in streams.values():
            stream._fail(self._closed_error())
        log.debug("connection closed name=%s cause=%r", self.name, cause)

    async def _read_loop(self) -> None:
        cause: BaseException
        try:
            while True:
                data = await self._reader.read(max(READ_CHUNK, self._decoder.bytes_needed()))
                if not data:
                    cause = ConnectionResetError("peer closed the connection")
                    break
                for event in self._decoder.feed(data):
                    self._dispatch(event)
        except asyncio.CancelledError:
            cause = ConnectionClosedError(f"connection to {self.name} closed by this side")
            self._shutdown(cause)
            raise
        except (OSError, ConnectionError, FluvioError) as exc:
            cause = exc
        except Exception as exc:  # a bug here must not leave callers waiting forever
            log.exception("connection reader failed name=%s", self.name)
            cause = exc
        self._shutdown(self._peer_error or cause)

    async def _receive_loop(self, receiver: FrameReceiver) -> None:
        """Wait for a ``FrameReceiver`` (which dispatches frames as they land) to stop."""
        try:
            cause = await receiver.attach(self._dispatch)
        except asyncio.CancelledError:
            self._shutdown(ConnectionClosedError(f"connection to {self.name} closed by this side"))
            raise
        self._shutdown(self._peer_error or cause)

    def _dispatch(self, event: Event) -> None:
        self._replied = True
        header = event.header
        cid = header.correlation_id
        if isinstance(event, OversizedFrame):
            self._fail_one(
                cid,
                RecordTooLargeError(
                    f"{api_name(header.api_key)} reply of {header.frame_length} bytes passes "
                    f"max_frame_size {event.limit}"
                ),
            )
            return
        kind = header.kind
        if kind in (FrameKind.RESPONSE, FrameKind.PUSH, FrameKind.END):
            try:
                meta = decode_meta(event.meta)
            except InvalidRequestError as exc:
                self._fail_one(cid, CorruptFrameError(f"bad reply from {self.name}: {exc}"))
                return
            if kind is FrameKind.RESPONSE:
                future = self._pending.pop(cid, None)
                if future is not None and not future.done():
                    future.set_result((meta, event.tail))
            elif (stream := self._streams.get(cid)) is not None:
                if kind is FrameKind.PUSH:
                    stream._put(Push(header.api_key, header.version, meta, event.tail))
                else:
                    self._streams.pop(cid, None)
                    stream._end(meta)
        elif kind is FrameKind.ERROR:
            err = self._error_from(event)
            if cid == 0:  # connection-level: the peer is about to close
                self._peer_error = err
            else:
                self._fail_one(cid, err)
        elif kind is FrameKind.REQUEST:
            # This side serves nothing; answer so the peer is not left waiting.
            self._send_nowait(
                encode_frame(
                    FrameKind.ERROR,
                    header.api_key,
                    cid,
                    ErrorReply(
                        UnsupportedVersionError.code, "this peer serves no requests"
                    ).to_meta(),
                )
            )

    def _error_from(self, frame: Frame) -> FluvioError:
        try:
            return ErrorReply.from_meta(decode_meta(frame.meta)).to_error()
        except InvalidRequestError as exc:
            return CorruptFrameError(f"malformed error reply from {self.name}: {exc}")

    def _fail_one(self, cid: int, err: FluvioError) -> None:
        future = self._pending.pop(cid, None)
        if future is not None and not future.done():
            future.set_exception(err)
        stream = self._streams.pop(cid, None)
        if stream is not None:
            stream._fail(err)
            self._send_nowait(encode_frame(FrameKind.CANCEL, stream.api_key, cid))


def _settle(future: asyncio.Future[Any]) -> None:
    """Retire a request's future once its caller stops waiting on it.

    A failed write shuts the connection down, which fails every pending future, this
    request's own included, while the caller raises from the write instead of awaiting
    it: retrieving the exception here keeps asyncio from logging it as never retrieved.
    A future still pending (timeout, cancellation) is cancelled.
    """
    if not future.done():
        future.cancel()
    elif not future.cancelled():
        future.exception()
