"""One accepted connection of a ``Server``: its read loop, handler tasks and replies.

Theory of operation. The read loop feeds bytes to a ``FrameDecoder`` and turns each
request frame into a task that calls the handler its ``Route`` names, then writes the
reply under the request's correlation id, so replies go out as handlers finish (out of
order). A stream's pushes are sent only while the client has granted credit
(``_Credit``), and a cancel frame stops its iterator. A typed ``FluvioError`` from a
handler becomes an error reply with its code, any other exception is logged and becomes
a generic error reply; a frame whose header cannot be read gets a connection-level error
(correlation id 0), then the session lingers so the peer reads it, and closes.

Memory. Each request frame is charged to the server's ``RequestBudget`` from its header
until its handler is done; when the next frame does not fit, reading stops until bytes
are released (see ``spark_stream.net.budget``).

Replies whose tail holds a large ``FileRegion`` (a fetch answered from a log segment)
go out with ``sendfile``: the kernel moves the file's pages to the socket with no copy
through Python (not under TLS, which encrypts in user space: the region is written from
memory). One such frame is sent at a time per connection; other replies written
meanwhile wait in order behind it, and a frame once begun is always finished, even if
its handler is cancelled, so the byte stream never tears.

Kept apart from ``server`` (which listens, accepts and owns the dispatch table) because
this is the per-connection protocol engine; log lines keep the ``server`` logger's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import AsyncIterable, Awaitable
from typing import TYPE_CHECKING, Any

from spark_stream.errors import (
    FluvioError,
    InvalidRequestError,
    RecordTooLargeError,
    TlsError,
    UnsupportedVersionError,
)
from spark_stream.net._chunk_reader import ChunkReader
from spark_stream.net._replies import sendable, unpack
from spark_stream.net._sockets import close_writer, write_parts
from spark_stream.net.tls import requires_client_cert
from spark_stream.protocol import (
    ErrorReply,
    FileRegion,
    Frame,
    FrameDecoder,
    FrameKind,
    OversizedFrame,
    Request,
    TailPart,
    api_name,
    decode_meta,
    encode_frame,
)

if TYPE_CHECKING:
    from spark_stream.net.server import ConnContext, Reply, Server

__all__ = ["Session"]

log = logging.getLogger("spark_stream.net.server")

LINGER_SECONDS = 1.0
LINGER_BYTES = 1 << 20


async def _maybe_await(value: Awaitable[None] | None) -> None:
    if inspect.isawaitable(value):
        await value


class Session:
    """One accepted connection: read loop, handler tasks, stream credit."""

    def __init__(
        self,
        server: Server,
        ctx: ConnContext,
        reader: ChunkReader,
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
        data = await self.reader.read()
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
                while discarded < LINGER_BYTES and (data := await self.reader.read()):
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
        meta, tail, key, version = unpack(reply, api_key)
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
            if self.server.tls is None and any(sendable(part) for part in parts):
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
                    if sendable(part):
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
