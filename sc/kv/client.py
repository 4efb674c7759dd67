"""The SC's Redis client from its URL: a plain ``redis://`` server or a Sentinel-watched one.

``redis://`` / ``rediss://`` / ``unix://`` URLs go to redis-py's ``from_url``. A
``redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]`` URL names the
Sentinels and the monitored master's service name: the client asks a Sentinel for the
current master before each new connection and drops connections to a master that was
replaced, so after a failover the SC's retries (``RedisKvStore``) land on the promoted
replica without a restart. The password is the data nodes'; the Sentinels are reached
without one. ``parse_sentinel_url`` is the pure part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel

__all__ = [
    "SENTINEL_SCHEME",
    "SentinelUrl",
    "close_client",
    "parse_sentinel_url",
    "redis_client",
]

SENTINEL_SCHEME = "redis+sentinel"


@dataclass(frozen=True, slots=True)
class SentinelUrl:
    """The parts of a ``redis+sentinel://`` URL."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None


def parse_sentinel_url(url: str) -> SentinelUrl | None:
    """The Sentinel URL's parts; None for any other scheme.

    Raises:
        ValueError: a ``redis+sentinel`` URL without hosts or service, with a bad port
            or database number.
    """
    parts = urlsplit(url)
    if parts.scheme != SENTINEL_SCHEME:
        return None
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":") if userinfo else ("", "", "")
    sentinels = []
    for item in hostlist.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{url!r}: sentinel {item!r} must be host:port")
        sentinels.append((host.strip("[]"), int(port)))
    path = [p for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise ValueError(f"{url!r}: the path must be /service or /service/db")
    if len(path) == 2 and not path[1].isdigit():
        raise ValueError(f"{url!r}: database {path[1]!r} must be a number")
    return SentinelUrl(
        tuple(sentinels),
        unquote(path[0]),
        int(path[1]) if len(path) == 2 else 0,
        unquote(username) or None,
        unquote(password) or None,
    )


def redis_client(url: str, **kwargs: Any) -> aioredis.Redis:
    """A client of the Redis ``url`` names (``kwargs`` go to each connection).

    Raises:
        ValueError: the URL cannot be parsed.
    """
    sentinel = parse_sentinel_url(url)
    if sentinel is None:
        return aioredis.Redis.from_url(url, **kwargs)
    timeouts = {k: v for k, v in kwargs.items() if k.startswith("socket_")}
    watchers = Sentinel(list(sentinel.sentinels), sentinel_kwargs=timeouts, **timeouts)
    return watchers.master_for(
        sentinel.service,
        db=sentinel.db,
        username=sentinel.username,
        password=sentinel.password,
        **kwargs,
    )


async def close_client(client: aioredis.Redis) -> None:
    """Close ``client`` and, for a Sentinel URL's, its connections to the Sentinels."""
    await client.aclose()
    manager = getattr(client.connection_pool, "sentinel_manager", None)
    for watcher in getattr(manager, "sentinels", ()):
        await watcher.aclose()
