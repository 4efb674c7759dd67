"""How a handler's reply becomes a frame's parts: pure, no I/O.

The server's sessions ask two questions of every reply they write: what meta, tail, api
key and version it stands for (``unpack``: a handler may return a typed message, an
already encoded one, a meta dict, a (meta, tail) pair or None), and which of its tail
parts are worth moving with ``sendfile`` (``sendable``). Both are answered here, apart
from the asyncio session that writes the bytes, so they read (and test) without sockets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from spark_stream.protocol import Encoded, FileRegion, Message, Tail, TailPart

if TYPE_CHECKING:
    from spark_stream.net.server import Reply

__all__ = ["SENDFILE_MIN_BYTES", "sendable", "unpack"]

SENDFILE_MIN_BYTES = 64 * 1024
"""File regions at least this large go out with ``sendfile``; smaller ones are cheaper
to write from memory."""


def sendable(part: TailPart) -> TypeGuard[FileRegion]:
    """A tail part worth sending with ``sendfile``."""
    if isinstance(part, bytes | bytearray | memoryview):
        return False  # the common case, before the runtime Protocol check (~10 us a part)
    return isinstance(part, FileRegion) and memoryview(part.data).nbytes >= SENDFILE_MIN_BYTES


def unpack(reply: Reply, api_key: int) -> tuple[dict[str, Any] | bytes, Tail, int, int]:
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
