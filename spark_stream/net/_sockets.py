"""Socket helpers both ends of a connection share: buffer sizes, part writes, closing."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from spark_stream.protocol import TailPart, as_buffer

__all__ = [
    "READ_CHUNK",
    "STREAM_LIMIT",
    "CLOSE_GRACE",
    "JOIN_BELOW",
    "write_parts",
    "close_writer",
    "reached_itself",
]

READ_CHUNK = 1 << 20
STREAM_LIMIT = 1 << 20
"""Receive flow-control limit (a client's ``StreamReader``, a server's ``ChunkReader``):
reading pauses past twice this many bytes waiting; bigger means fewer wake-ups."""

CLOSE_GRACE = 2.0
"""Seconds a closing socket may spend flushing queued bytes before it is aborted."""

JOIN_BELOW = 64 * 1024
"""``write_parts`` joins parts smaller than this into one write; larger ones go alone."""


def reached_itself(sockname: Any, peername: Any) -> bool:
    """True when a client socket is connected to itself.

    TCP's simultaneous open does that when nothing listens on a loopback port in the
    ephemeral range and the kernel picks that very port for the client: the socket would
    then read its own requests back as replies.
    """
    return sockname is not None and sockname == peername


def write_parts(writer: asyncio.StreamWriter, parts: Sequence[TailPart]) -> None:
    """Queue a frame's parts on ``writer`` back to back, without joining large ones.

    ``writelines`` joins every part into one new bytes object: a copy of a whole produce
    batch or fetch reply. Here small parts (the header, the meta) are joined and each
    large one is handed to the transport as it is.
    """
    small: list[Any] = []
    for part in parts:
        buf = as_buffer(part)
        if memoryview(buf).nbytes < JOIN_BELOW:
            small.append(buf)
            continue
        if small:
            writer.write(b"".join(small))
            small = []
        writer.write(buf)
    if small:
        writer.write(small[0] if len(small) == 1 else b"".join(small))


async def close_writer(writer: asyncio.StreamWriter, grace: float = CLOSE_GRACE) -> None:
    """Close a stream writer, flushing queued bytes for up to ``grace`` seconds, then abort."""
    writer.close()
    try:
        async with asyncio.timeout(grace):
            await writer.wait_closed()
    except TimeoutError:
        writer.transport.abort()
    except (OSError, ConnectionError):
        pass
