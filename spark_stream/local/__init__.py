"""Local cluster helpers: the embedded Redis server, and a local cluster's SC and SPUs."""

from __future__ import annotations

from spark_stream.local.redis_server import RedisServer, find_redis_server, free_port

__all__ = ["RedisServer", "find_redis_server", "free_port"]
