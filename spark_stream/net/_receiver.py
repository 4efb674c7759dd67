"""The receiving half of a ``Connection``: frames read off the socket with one copy.

A buffered protocol: the socket writes headers and small frames into a reusable scratch
buffer and each large frame body straight into a buffer of its own, so a reply's tail is
a view of the one and only copy of its bytes. Header rules are the decoder's
(``classify_header``/``split_body``), never parsed twice in two ways.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from spark_stream.errors import CorruptFrameError
from spark_stream.protocol import FRAME_HEADER_SIZE, Event, FrameHeader, OversizedFrame
from spark_stream.protocol.body_buffer import body_buffer
from spark_stream.protocol.decoder import classify_header, split_body

__all__ = ["FrameReceiver", "SCRATCH_SIZE", "OWN_BUFFER_BODY"]

log = logging.getLogger("spark_stream.net.connection")

SCRATCH_SIZE = 1 << 18
"""Bytes of the receiver's reusable buffer for headers and small frames."""
OWN_BUFFER_BODY = SCRATCH_SIZE // 4
"""Bodies at least this long (and not already received whole) get their own buffer."""


class FrameReceiver(asyncio.StreamReaderProtocol, asyncio.BufferedProtocol):
    """Receives frames with one copy of their bytes: the socket reads straight into them.

    Headers and small frames land in a reusable scratch buffer (a small frame is copied
    out once, as it cannot keep the scratch alive). A body of ``OWN_BUFFER_BODY`` bytes or
    more gets a buffer of its own once its header is parsed, and the socket reads the rest
    of it straight there, so a large tail reaches the caller as a view of the only copy.
    Framing rules come from ``classify_header`` (the ``FrameDecoder``'s own); oversized
    bodies are skipped. Write flow control and close waiting are the
    ``StreamReaderProtocol``'s, so a ``StreamWriter`` works on top of it as usual.
    """

    def __init__(
        self, reader: asyncio.StreamReader, max_frame_size: int, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(reader, loop=loop)
        self._max_frame_size = max_frame_size
        self._scratch = bytearray(SCRATCH_SIZE)
        self._view = memoryview(self._scratch)
        self._start = 0  # unparsed scratch bytes are [_start, _end)
        self._end = 0
        self._header: FrameHeader | None = None
        self._skip = 0
        self._body: memoryview | None = None  # own buffer of the frame being received
        self._filled = 0
        self._handler: Callable[[Event], None] | None = None
        self._early: list[Event] = []  # events before a handler was attached
        self._stopped: asyncio.Future[BaseException] = loop.create_future()

    def attach(self, handler: Callable[[Event], None]) -> asyncio.Future[BaseException]:
        """Deliver events to ``handler`` from now on; the result resolves to the close cause."""
        self._handler = handler
        early, self._early = self._early, []
        for event in early:
            self._emit(event)
        return self._stopped

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is not None:
            return self._body[self._filled :]
        if self._start:
            rest = bytes(self._view[self._start : self._end])
            self._end = len(rest)
            self._view[: self._end] = rest
            self._start = 0
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._stopped.done():
            return
        try:
            if self._body is not None:
                self._filled += nbytes
                if self._filled == self._body.nbytes and self._header is not None:
                    header, body = self._header, self._body
                    self._header = self._body = None
                    self._emit(split_body(header, body))
                return
            self._end += nbytes
            self._parse()
        except CorruptFrameError as exc:
            self._stop(exc)
        except Exception as exc:  # a bug here must not leave callers waiting forever
            log.exception("frame receiver failed")
            self._stop(exc)

    def data_received(self, data: bytes) -> None:
        """Bytes from a loop that does not use the buffered path with this protocol.

        uvloop treats a protocol as buffered only when it is not an ``asyncio.Protocol``,
        and ``StreamReaderProtocol`` is one: it calls this instead of ``get_buffer``, so
        the bytes are copied into the buffers ``get_buffer`` hands out (one copy more
        than the selector loop's path, nothing lost to the unused ``StreamReader``).
        """
        view = memoryview(data)
        while view.nbytes and not self._stopped.done():
            buf = self.get_buffer(view.nbytes)
            n = min(buf.nbytes, view.nbytes)
            if n == 0:  # cannot happen (small frames are parsed, large get their own)
                self._stop(CorruptFrameError("frame receiver has no room for received bytes"))
                return
            buf[:n] = view[:n]
            view = view[n:]
            self.buffer_updated(n)

    def eof_received(self) -> bool | None:
        self._stop(ConnectionResetError("peer closed the connection"))
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._stop(exc or ConnectionResetError("peer closed the connection"))

    def _parse(self) -> None:
        """Hand out every whole event in the scratch buffer; move a big body to its own."""
        view = self._view
        while not self._stopped.done():
            if self._skip:
                step = min(self._skip, self._end - self._start)
                self._start += step
                self._skip -= step
                if self._skip:
                    break
            if self._header is None:
                if self._end - self._start < FRAME_HEADER_SIZE:
                    break
                parsed = classify_header(view, self._max_frame_size, self._start)
                self._start += FRAME_HEADER_SIZE
                if isinstance(parsed, OversizedFrame):
                    self._skip = parsed.header.body_length
                    self._emit(parsed)
                    continue
                self._header = parsed
            need = self._header.body_length
            have = self._end - self._start
            if have >= need:
                header, self._header = self._header, None
                body = memoryview(bytes(view[self._start : self._start + need]))
                self._start += need
                self._emit(split_body(header, body))
                continue
            if need >= OWN_BUFFER_BODY:
                body = body_buffer(need)
                body[:have] = view[self._start : self._end]
                self._body, self._filled = body, have
                self._start = self._end = 0
            break
        if self._start == self._end:
            self._start = self._end = 0

    def _emit(self, event: Event) -> None:
        if self._handler is None:
            self._early.append(event)
        else:
            self._handler(event)

    def _stop(self, cause: BaseException) -> None:
        if not self._stopped.done():
            self._stopped.set_result(cause)
