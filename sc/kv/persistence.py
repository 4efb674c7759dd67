"""Does the Redis under the SC keep its data? Checked once at the SC's start.

Why: the SC's desired state (topics, partitions, SPUs, groups) lives in Redis. A Redis
without persistence loses all of it on a restart; the SPUs still hold the data and the SC
rebuilds topics and partitions from their reports (``sc.rebuild``), but consumer-group
offsets, SPU groups and settings no SPU reports are gone. The SC therefore asks Redis
(``CONFIG GET appendonly``, ``CONFIG GET save``, ``INFO persistence``) and logs a
warning naming the fix, or refuses to start with ``require_redis_persistence``.

``persistence_problem`` is the pure judgement; ``check_persistence`` asks Redis. A Redis
that refuses ``CONFIG`` (managed services often do) is judged on ``INFO`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redis.exceptions import RedisError

from sc.kv.client import close_client, redis_client

__all__ = ["check_persistence", "persistence_problem"]


def persistence_problem(config: Mapping[str, str], info: Mapping[str, Any]) -> str | None:
    """Why this Redis would lose acknowledged writes on a restart; None when it would not.

    Args:
        config: ``CONFIG GET`` answers (``appendonly``, ``appendfsync``, ``save``); empty
            when ``CONFIG`` is refused.
        info: ``INFO persistence`` (``aof_enabled``, ``rdb_last_save_time``...).
    """
    aof = str(config.get("appendonly", "")).lower() == "yes" or str(
        info.get("aof_enabled", "0")
    ) in ("1", "yes")
    if aof:
        if str(config.get("appendfsync", "")).lower() == "no":
            return "appendfsync is 'no': the OS decides when writes reach the disk"
        return None
    if config.get("save"):
        return (
            f"the append-only file is off (only RDB snapshots, save {config['save']!r}): "
            "writes since the last snapshot are lost on a restart"
        )
    return "persistence is off (appendonly no, no RDB snapshots): a restart loses everything"


async def check_persistence(url: str, timeout: float = 5.0) -> str | None:  # noqa: ASYNC109
    """Ask the Redis at ``url`` and judge it (``persistence_problem``).

    Raises:
        RedisError: Redis did not answer ``INFO``.
    """
    client = redis_client(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, decode_responses=True
    )
    try:
        config: dict[str, str] = {}
        for name in ("appendonly", "appendfsync", "save"):
            try:
                answer = await client.config_get(name)
                config.update({str(k): str(v) for k, v in answer.items()})
            except RedisError:
                config = {}  # CONFIG refused (a managed Redis): judge on INFO alone
                break
        info = await client.info("persistence")
    finally:
        await close_client(client)
    return persistence_problem(config, info)
