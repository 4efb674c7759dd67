"""The receiving half of a server session: each received chunk handed on as it came.

An ``asyncio.StreamReader`` copies every received chunk into its buffer and ``read``
copies it out again, and the session's ``FrameDecoder`` then copies a large body into
its own buffer: three copies of each byte a server receives. ``ChunkReader`` queues the
chunks the transport hands over (``bytes`` it may keep; a view of a transport's reusable
buffer is copied once) and ``read`` returns them whole, so the decoder's copy is the
only one in Python. Flow control is the ``StreamReader``'s: reading pauses while more
than ``2 * limit`` bytes wait and resumes once no more than ``limit`` do. Write flow
control and close waiting stay ``StreamReaderProtocol``'s, so a ``StreamWriter`` works
on top of it as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import cast

from spark_stream.net._sockets import STREAM_LIMIT

__all__ = ["ChunkReader", "chunk_reader_of"]

ConnectedCallback = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None] | None]


class ChunkReader(asyncio.StreamReaderProtocol):
    """A stream protocol whose ``read`` returns received chunks without copying them.

    Args:
        client_connected_cb: called with a reader and writer once connected (a server's
            accept callback, as for ``StreamReaderProtocol``); the reader is unused, the
            bytes come from ``read``.
        limit: the flow-control limit (see the module docstring).
    """

    def __init__(
        self, client_connected_cb: ConnectedCallback | None = None, *, limit: int = STREAM_LIMIT
    ) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        super().__init__(reader, client_connected_cb, loop=loop)
        #: Only for a ``StreamWriter`` (it reports a lost connection's error through it);
        #: received bytes come from ``read``. Held here: the base keeps a weak reference.
        self.reader = reader
        self._chunks: deque[bytes] = deque()
        self._waiting = 0  # bytes in ``_chunks``
        self._limit = limit
        self._read_transport: asyncio.ReadTransport | None = None
        self._read_paused = False
        self._ended = False  # EOF received or the connection lost
        self._failure: BaseException | None = None
        self._wakeup: asyncio.Future[None] | None = None

    async def read(self) -> bytes:
        """The next received chunk; ``b""`` at end of input.

        Raises:
            OSError: the connection was lost with this error, after every chunk
                received before it was read.
        """
        while not self._chunks:
            if self._failure is not None:
                raise self._failure
            if self._ended:
                return b""
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None
        chunk = self._chunks.popleft()
        self._waiting -= len(chunk)
        if self._read_paused and self._waiting <= self._limit:
            self._read_paused = False
            if self._read_transport is not None:
                with contextlib.suppress(RuntimeError):  # closing transports refuse it
                    self._read_transport.resume_reading()
        return chunk

    # -- asyncio.Protocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A read transport; not always an ``asyncio.Transport`` instance (uvloop's are not).
        self._read_transport = cast(asyncio.ReadTransport, transport)
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        chunk = data if type(data) is bytes else bytes(data)  # a view of a reused buffer
        if not chunk:
            return
        self._chunks.append(chunk)
        self._waiting += len(chunk)
        if not self._read_paused and self._waiting > 2 * self._limit:
            self._read_paused = True
            if self._read_transport is not None:
                self._read_transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._ended = True
        self._wake()
        return bool(super().eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        if exc is not None:
            self._failure = exc
        self._wake()
        super().connection_lost(exc)

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)


def chunk_reader_of(writer: asyncio.StreamWriter) -> ChunkReader:
    """The ``ChunkReader`` under ``writer`` (a server connection's protocol).

    Raises:
        TypeError: the connection was made with another protocol (a wiring bug).
    """
    protocol = writer.transport.get_protocol()
    if not isinstance(protocol, ChunkReader):
        name = type(protocol).__name__
        raise TypeError(f"server connection has protocol {name}, not ChunkReader")
    return protocol
