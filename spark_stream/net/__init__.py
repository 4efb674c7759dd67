"""Transport: one asyncio connection class for every peer and one frame server.

``Connection`` is the client end (requests, calls and credit-based streams multiplexed
by correlation id); ``Server`` is the accepting end (one handler per api key). Both
speak the frames of ``spark_stream.protocol`` and share ``_sockets``.
"""

from __future__ import annotations

from spark_stream.net.connection import DEFAULT_STREAM_WINDOW, Connection
from spark_stream.net.server import ConnContext, Handler, Reply, Route, Server
from spark_stream.net.stream import Stream

__all__ = [
    "Connection",
    "Stream",
    "DEFAULT_STREAM_WINDOW",
    "Server",
    "ConnContext",
    "Handler",
    "Reply",
    "Route",
]
