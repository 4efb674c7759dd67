"""The consumer end of a stream opened on a ``Connection``: pushes, credit, the end.

A ``Stream`` queues the pushes its connection routes to it (at most ``window``, the
credit granted when it was opened; more is a protocol violation that fails the stream)
and hands them out as an async iterator. Half the window taken is granted back with a
``CREDIT`` frame, written once the caller has the item. The end marker ends iteration;
an error (from the server or the connection) is raised after the pushes already
received. The connection (``spark_stream.net.connection``) creates and feeds streams.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any, Self

from spark_stream.errors import ConnectionClosedError, CorruptFrameError, FluvioError
from spark_stream.protocol import FrameKind, Push, api_name, encode_frame

if TYPE_CHECKING:
    from spark_stream.net.connection import Connection

__all__ = ["Stream"]


class Stream:
    """The consumer end of a stream: an async iterator of ``Push`` items.

    Iteration ends when the server sends the end marker (its meta is in ``end_meta``)
    and raises the typed error if the server fails the stream or the connection closes.
    One task consumes a stream; pushes already received are delivered before an error.
    """

    def __init__(self, conn: Connection, cid: int, api_key: int, window: int) -> None:
        self._conn = conn
        self.correlation_id = cid
        self.api_key = api_key
        self.window = window
        self._items: deque[Push] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._done = False
        self._error: FluvioError | None = None
        self._ungranted = 0
        self.end_meta: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        """True once the stream ended, failed or was closed (items may still be queued)."""
        return self._done

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Push:
        while not self._items:
            if self._error is not None:
                err = type(self._error)(str(self._error))
                err.__cause__ = self._error.__cause__
                raise err
            if self._done:
                raise StopAsyncIteration
            self._waiter = self._conn._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._items.popleft()
        self._ungranted += 1
        if not self._done and self._ungranted >= max(1, self.window // 2):
            grant, self._ungranted = self._ungranted, 0
            credit = encode_frame(
                FrameKind.CREDIT, self.api_key, self.correlation_id, {"credit": grant}
            )  # written next turn, once the caller has the item (the server holds half)
            self._conn._loop.call_soon(self._conn._send_nowait, credit)
        return item

    async def aclose(self) -> None:
        """Stop the stream: tell the server to cancel it and drop what is queued."""
        if self._done:
            return
        self._done = True
        self._items.clear()
        self._wake()
        if self._conn._streams.pop(self.correlation_id, None) is not None:
            with contextlib.suppress(ConnectionClosedError):
                await self._conn._send(
                    encode_frame(FrameKind.CANCEL, self.api_key, self.correlation_id)
                )

    def fail(self, err: FluvioError) -> None:
        """End the stream with ``err`` from this side (pushes already received come
        first), cancelling it on the server: e.g. the metadata says its SPU is gone."""
        if not self._done:
            self._conn._fail_one(self.correlation_id, err)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _put(self, item: Push) -> None:
        if self._done:
            return
        if len(self._items) >= self.window:
            self._conn._fail_one(
                self.correlation_id,
                CorruptFrameError(
                    f"{api_name(self.api_key)} stream from {self._conn.name} sent more pushes "
                    f"than the {self.window} granted"
                ),
            )
            return
        self._items.append(item)
        self._wake()

    def _end(self, meta: dict[str, Any]) -> None:
        self.end_meta = meta
        self._done = True
        self._wake()

    def _fail(self, err: FluvioError) -> None:
        if self._done:
            return
        self._error = err
        self._done = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
