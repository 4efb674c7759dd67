"""The protocol frame: a fixed 20-byte header, a msgpack meta map, and a raw binary tail.

Theory of operation. Every message on every connection (client<->SC, SC<->SPU,
SPU<->SPU) is one frame. All integers are little-endian, as in the batch frame:

    off size field
      0    4 length          u32, bytes after this field: 16 + meta_length + tail
      4    1 magic           0xF5, catches a peer that speaks something else
      5    1 kind            FrameKind: request, response, error, push, end, cancel, credit
      6    1 flags           bit 0 STREAM: this request opens a stream of pushes
      7    1 reserved        0
      8    2 api_key         u16, ApiKey of the request this frame belongs to
     10    2 version         u16, version of that api's message layout
     12    4 correlation_id  u32, chosen by the requester, echoed in every reply
     16    4 meta_length     u32, bytes of msgpack meta that follow the header
     20    .  meta           msgpack map (small control fields)
      .    .  tail           raw bytes to the end of the frame (batch frames, never re-encoded)

The tail is never parsed here: a sender hands it to the socket as separate buffers
(``encode_frame`` returns a list of parts) and a receiver sees it as a
memoryview slice of the received frame. A tail part may also be a ``FileRegion`` (bytes
of a file, e.g. a log segment), which a server sends with ``sendfile``: the kernel moves
the pages to the socket without a copy through Python. Correlation id 0 is reserved for
connection-level errors (the peer is about to close the connection).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any, Protocol, runtime_checkable

from spark_stream.errors import CorruptFrameError, InvalidRequestError, RecordTooLargeError
from spark_stream.protocol.meta import encode_meta

__all__ = [
    "FRAME_MAGIC",
    "FRAME_HEADER_SIZE",
    "DEFAULT_MAX_FRAME_SIZE",
    "MAX_CORRELATION_ID",
    "Buffer",
    "FileRegion",
    "TailPart",
    "Tail",
    "FrameKind",
    "FrameFlags",
    "FrameHeader",
    "Frame",
    "OversizedFrame",
    "parse_header",
    "encode_frame",
    "received_tail",
    "tail_length",
    "part_length",
    "as_buffer",
]

FRAME_MAGIC = 0xF5
_HEADER = struct.Struct("<IBBBBHHII")
FRAME_HEADER_SIZE = _HEADER.size  # 20
_AFTER_LENGTH = FRAME_HEADER_SIZE - 4  # header bytes counted by the length field
DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024
MAX_CORRELATION_ID = 2**32 - 1
_U16 = 2**16 - 1
_U32 = 2**32 - 1

Buffer = bytes | bytearray | memoryview


@runtime_checkable
class FileRegion(Protocol):
    """A tail part that lives in a file: ``data`` is ``len(data)`` bytes of the file
    behind ``fileno()`` from ``position`` on (e.g. a memory map of a log segment).

    A server may ``sendfile`` the range; anything else sends ``data``.
    """

    @property
    def position(self) -> int:
        """Byte position of ``data`` in the file."""
        ...

    @property
    def data(self) -> memoryview:
        """The same bytes, in memory."""
        ...

    def fileno(self) -> int:
        """The file's descriptor."""
        ...


TailPart = Buffer | FileRegion
Tail = Buffer | Sequence[TailPart]


class FrameKind(IntEnum):
    """What a frame is; requests flow one way, everything else answers a request."""

    REQUEST = 0
    RESPONSE = 1
    ERROR = 2
    PUSH = 3
    END = 4
    CANCEL = 5
    CREDIT = 6


class FrameFlags(IntFlag):
    """Per-frame flags; unknown bits are a protocol error."""

    NONE = 0
    STREAM = 1


_KNOWN_FLAGS = int(FrameFlags.STREAM)
_KINDS = frozenset(int(k) for k in FrameKind)


@dataclass(frozen=True, slots=True)
class FrameHeader:
    """The decoded fixed header of one protocol frame."""

    kind: FrameKind
    flags: FrameFlags
    api_key: int
    version: int
    correlation_id: int
    meta_length: int
    body_length: int

    @property
    def frame_length(self) -> int:
        """Bytes of the whole frame, header included."""
        return FRAME_HEADER_SIZE + self.body_length

    @property
    def tail_length(self) -> int:
        """Bytes of the raw tail after the meta."""
        return self.body_length - self.meta_length

    @property
    def is_stream(self) -> bool:
        """True when a request asks for a stream of pushes rather than one response."""
        return bool(self.flags & FrameFlags.STREAM)


@dataclass(frozen=True, slots=True)
class Frame:
    """One whole frame: its header, the undecoded meta bytes, and the raw tail.

    ``meta`` and ``tail`` are memoryviews into the received buffer: no copy is made, and
    the buffer stays alive as long as either view does.
    """

    header: FrameHeader
    meta: memoryview
    tail: memoryview


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """A frame whose header was valid but whose size passed the limit; its body was skipped.

    The receiver can still answer it (the correlation id is known), e.g. with
    ``RecordTooLargeError``, and the connection stays in sync.
    """

    header: FrameHeader
    limit: int


def parse_header(buf: Buffer, pos: int = 0) -> FrameHeader:
    """Parse and sanity-check the 20-byte header at ``pos``.

    Raises:
        CorruptFrameError: too few bytes, bad magic, unknown kind or flags, or lengths
            that cannot hold together. The byte stream cannot be resynchronised after this.
    """
    view = memoryview(buf)
    if len(view) - pos < FRAME_HEADER_SIZE:
        raise CorruptFrameError(
            f"truncated protocol header: {len(view) - pos} of {FRAME_HEADER_SIZE} bytes"
        )
    (length, magic, kind, flags, reserved, api_key, version, correlation_id, meta_length) = (
        _HEADER.unpack_from(view, pos)
    )
    if magic != FRAME_MAGIC:
        raise CorruptFrameError(
            f"bad protocol magic {magic:#04x}, expected {FRAME_MAGIC:#04x}: "
            "the peer does not speak this protocol or the stream is out of sync"
        )
    if kind not in _KINDS:
        raise CorruptFrameError(f"unknown frame kind {kind}")
    if flags & ~_KNOWN_FLAGS:
        raise CorruptFrameError(f"unknown frame flags {flags:#04x}")
    if reserved != 0:
        raise CorruptFrameError(f"reserved header byte is {reserved}, must be 0")
    if length < _AFTER_LENGTH:
        raise CorruptFrameError(f"frame length {length} is shorter than its own header")
    body_length = length - _AFTER_LENGTH
    if meta_length > body_length:
        raise CorruptFrameError(
            f"meta length {meta_length} is longer than the frame body ({body_length} bytes)"
        )
    return FrameHeader(
        FrameKind(kind),
        FrameFlags(flags),
        api_key,
        version,
        correlation_id,
        meta_length,
        body_length,
    )


def part_length(part: TailPart) -> int:
    """Bytes of one tail part."""
    if isinstance(part, bytes | bytearray | memoryview):
        return memoryview(part).nbytes
    return memoryview(part.data).nbytes


def as_buffer(part: TailPart) -> Buffer:
    """A tail part as an in-memory buffer (a ``FileRegion`` gives its ``data``)."""
    if isinstance(part, bytes | bytearray | memoryview):
        return part
    return part.data


def received_tail(tail: Tail) -> Buffer:
    """The tail of a received message, which is always one buffer (parts are only sent).

    Raises:
        TypeError: ``tail`` is a sequence of parts: a message built to be sent.
    """
    if isinstance(tail, bytes | bytearray | memoryview):
        return tail
    raise TypeError("a tail of parts belongs to a message being sent, not one received")


def tail_length(tail: Tail) -> int:
    """Total bytes of a tail given as one buffer or a sequence of parts."""
    if isinstance(tail, bytes | bytearray | memoryview):
        return memoryview(tail).nbytes
    return sum(part_length(part) for part in tail)


def encode_frame(
    kind: FrameKind,
    api_key: int,
    correlation_id: int,
    meta: dict[str, Any] | Buffer | None = None,
    tail: Tail = b"",
    *,
    version: int = 0,
    flags: FrameFlags = FrameFlags.NONE,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
) -> list[TailPart]:
    """Encode one frame as a list of parts to send back to back (the tail is not copied).

    The first part is the header and meta; ``FileRegion`` parts of the tail stay as they
    are, for a sender that can ``sendfile`` them (``as_buffer`` gives their bytes).

    Args:
        kind: what the frame is.
        api_key: the api of the request (echoed in replies and pushes).
        correlation_id: the requester's id, echoed in every reply.
        meta: a dict (msgpack-encoded here), pre-encoded msgpack bytes, or None for ``{}``.
        tail: raw bytes appended as-is; a sequence of parts is sent back to back.
        version: the api version the meta layout follows.
        flags: frame flags, e.g. ``FrameFlags.STREAM`` on a stream-opening request.
        max_frame_size: refuse to build a frame larger than this.

    Raises:
        InvalidRequestError: a header field is out of range or the meta is not encodable.
        RecordTooLargeError: the frame would pass ``max_frame_size``.
    """
    if not 0 <= api_key <= _U16:
        raise InvalidRequestError(f"api key {api_key} does not fit in 16 bits")
    if not 0 <= version <= _U16:
        raise InvalidRequestError(f"api version {version} does not fit in 16 bits")
    if not 0 <= correlation_id <= MAX_CORRELATION_ID:
        raise InvalidRequestError(f"correlation id {correlation_id} does not fit in 32 bits")
    if isinstance(meta, bytes | bytearray | memoryview):
        meta_bytes = bytes(meta)
    else:
        meta_bytes = encode_meta({} if meta is None else meta)
    tail_parts: list[TailPart]
    if isinstance(tail, bytes | bytearray | memoryview):
        tail_parts = [tail] if memoryview(tail).nbytes else []
    else:
        tail_parts = [part for part in tail if part_length(part)]
    body_length = len(meta_bytes) + sum(part_length(part) for part in tail_parts)
    frame_length = FRAME_HEADER_SIZE + body_length
    if frame_length > max_frame_size or body_length + _AFTER_LENGTH > _U32:
        raise RecordTooLargeError(
            f"frame of {frame_length} bytes passes the limit of {max_frame_size} bytes"
        )
    head = _HEADER.pack(
        _AFTER_LENGTH + body_length,
        FRAME_MAGIC,
        int(kind),
        int(flags),
        0,
        api_key,
        version,
        correlation_id,
        len(meta_bytes),
    )
    return [head + meta_bytes, *tail_parts]
