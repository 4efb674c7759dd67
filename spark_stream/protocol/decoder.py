"""A sans-I/O frame decoder: feed it bytes as they arrive, take out whole frames.

Theory of operation. The decoder is a three-state machine over a queue of received
chunks:

- *header*: wait for 20 bytes, parse them (``parse_header``). A bad header means the
  byte stream can no longer be split into frames: the decoder raises
  ``CorruptFrameError`` and stays failed (every later call raises again).
- *body*: wait until the whole body is buffered, then hand out a ``Frame`` whose meta
  and tail are memoryview slices. A body that lies inside one received chunk is sliced
  from it without a copy; a body spread over chunks is joined once into one buffer. A
  body of ``BODY_BUFFER_MIN`` bytes or more gets that buffer at the first ``feed`` after
  its header, and each later chunk is copied in and dropped at once, so a large frame
  never sits in memory both as chunks and as its joined copy (and a caller can reserve
  memory for ``pending`` before feeding its body).
- *skip*: a frame whose header is valid but whose size passes ``max_frame_size`` is
  reported as ``OversizedFrame`` at once and its body is discarded as it arrives, so
  the receiver can answer it and the stream stays in sync.

Buffering is bounded: the decoder never holds more than one frame (at most
``max_frame_size`` bytes) plus the rest of the last chunk fed. Each call does work
proportional to the bytes fed, so random input cannot make it loop.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from spark_stream.errors import CorruptFrameError
from spark_stream.protocol.body_buffer import body_buffer
from spark_stream.protocol.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    FRAME_HEADER_SIZE,
    Buffer,
    Frame,
    FrameHeader,
    OversizedFrame,
    parse_header,
)

__all__ = ["FrameDecoder", "Event", "classify_header", "split_body", "BODY_BUFFER_MIN"]

Event = Frame | OversizedFrame

BODY_BUFFER_MIN = 1 << 16
"""Bodies at least this long, spread over chunks, are copied into their buffer as fed."""


def classify_header(buf: Buffer, max_frame_size: int, pos: int = 0) -> FrameHeader | OversizedFrame:
    """Parse the header at ``pos``: its ``FrameHeader``, or ``OversizedFrame`` past the limit.

    Shared by ``FrameDecoder`` and receivers that read each body straight into its own
    buffer, so the framing rules live in one place.

    Raises:
        CorruptFrameError: the header cannot be a frame (see ``parse_header``).
    """
    header = parse_header(buf, pos)
    if header.frame_length > max_frame_size:
        return OversizedFrame(header, max_frame_size)
    return header


def split_body(header: FrameHeader, body: memoryview) -> Frame:
    """The ``Frame`` whose whole body (meta then tail, ``header.body_length`` bytes) is ``body``."""
    return Frame(header, body[: header.meta_length], body[header.meta_length :])


class FrameDecoder:
    """Splits a byte stream into protocol frames.

    The decoder keeps references to the buffers it is fed (frames are slices of them),
    so callers must not mutate a buffer after feeding it.

    Args:
        max_frame_size: largest frame (header included) that is buffered and delivered;
            larger ones become ``OversizedFrame`` events and their bodies are skipped.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < FRAME_HEADER_SIZE:
            raise ValueError(f"max_frame_size must be at least {FRAME_HEADER_SIZE} bytes")
        self.max_frame_size = max_frame_size
        self._chunks: deque[memoryview] = deque()
        self._buffered = 0
        self._header: FrameHeader | None = None
        self._body: memoryview | None = None  # the pending frame's own buffer, if it has one
        self._filled = 0
        self._skip = 0
        self._error: str | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet handed out (or skipped)."""
        return self._buffered + self._filled

    @property
    def pending(self) -> FrameHeader | None:
        """The header of the frame whose body is being buffered, None between frames.

        A server reserves the frame's bytes from its memory budget as soon as this is set,
        before it reads the body.
        """
        return self._header

    @property
    def failed(self) -> bool:
        """True once a corrupt header was seen; the decoder accepts nothing more."""
        return self._error is not None

    def bytes_needed(self) -> int:
        """A lower bound on the bytes still missing for the next event (at least 1)."""
        if self._skip:
            return self._skip
        if self._header is None:
            return max(1, FRAME_HEADER_SIZE - self._buffered)
        return max(1, self._header.body_length - self._buffered - self._filled)

    def feed(self, data: Buffer) -> Iterator[Event]:
        """Buffer ``data`` and iterate over every event that is now complete.

        All state lives in the decoder: an iterator left unfinished loses nothing, the
        remaining events come out of the next ``feed`` or ``next_event`` call.

        Raises:
            CorruptFrameError: (while iterating) at the first header that cannot be a frame.
        """
        self._check()
        view = memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        if view.nbytes and self._header is not None and not self._skip:
            view = self._fill(self._header, view)
        if view.nbytes:
            self._chunks.append(view)
            self._buffered += view.nbytes
        return self._events()

    def next_event(self) -> Event | None:
        """The next complete event, or None when more bytes are needed.

        Raises:
            CorruptFrameError: the next header cannot be a frame; the decoder stays failed.
        """
        self._check()
        if self._skip:
            self._discard(min(self._skip, self._buffered))
            if self._skip:
                return None
        if self._header is None:
            if self._buffered < FRAME_HEADER_SIZE:
                return None
            try:
                parsed = classify_header(self._take(FRAME_HEADER_SIZE), self.max_frame_size)
            except CorruptFrameError as exc:
                self._fail(str(exc))
                raise
            if isinstance(parsed, OversizedFrame):
                self._skip = parsed.header.body_length
                return parsed
            self._header = parsed
        header = self._header
        if self._body is not None:
            if self._filled < header.body_length:
                return None
            body, self._body, self._filled = self._body, None, 0
        elif self._buffered < header.body_length:
            return None
        else:
            body = self._take(header.body_length)
        self._header = None
        return split_body(header, body)

    def _fill(self, header: FrameHeader, data: memoryview) -> memoryview:
        """Copy what ``data`` holds of a large pending body into its buffer; the rest."""
        if self._body is None:
            if (
                header.body_length < BODY_BUFFER_MIN
                or self._buffered >= header.body_length  # already whole (events not taken)
                or (not self._chunks and data.nbytes >= header.body_length)
            ):
                return data  # small, or whole in one chunk: sliced without a copy
            self._body = body_buffer(header.body_length)
            self._filled = 0
            while self._chunks:  # only body bytes are buffered now (buffered < body_length)
                chunk = self._chunks.popleft()
                self._body[self._filled : self._filled + chunk.nbytes] = chunk
                self._filled += chunk.nbytes
            self._buffered = 0
        step = min(data.nbytes, self._body.nbytes - self._filled)
        self._body[self._filled : self._filled + step] = data[:step]
        self._filled += step
        return data[step:]

    def _events(self) -> Iterator[Event]:
        while (event := self.next_event()) is not None:
            yield event

    def _check(self) -> None:
        if self._error is not None:
            raise CorruptFrameError(f"decoder failed earlier: {self._error}")

    def _fail(self, reason: str) -> None:
        self._error = reason
        self._chunks.clear()
        self._buffered = 0
        self._body, self._filled = None, 0

    def _take(self, n: int) -> memoryview:
        """Remove ``n`` buffered bytes (n <= buffered): a slice if one chunk holds them."""
        if n == 0:
            return memoryview(b"")
        first = self._chunks[0]
        if first.nbytes >= n:
            out = first[:n]
            self._drop_front(n)
            return out
        joined = bytearray(n)
        filled = 0
        while filled < n:
            chunk = self._chunks[0]
            step = min(chunk.nbytes, n - filled)
            joined[filled : filled + step] = chunk[:step]
            filled += step
            self._drop_front(step)
        return memoryview(joined)

    def _discard(self, n: int) -> None:
        while n:
            step = min(self._chunks[0].nbytes, n)
            self._drop_front(step)
            self._skip -= step
            n -= step

    def _drop_front(self, n: int) -> None:
        first = self._chunks[0]
        if first.nbytes == n:
            self._chunks.popleft()
        else:
            self._chunks[0] = first[n:]
        self._buffered -= n
