"""Redis persistence: the SC's judgement (pure table) and the local Redis that keeps its
data (real ``redis-server`` processes)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import redis

from sc.kv.persistence import check_persistence, persistence_problem
from spark_stream.errors import InvalidConfigError
from spark_stream.local import RedisServer
from spark_stream.local.redis_server import redis_argv


@pytest.mark.parametrize(
    ("config", "info", "problem"),
    [
        ({"appendonly": "yes", "appendfsync": "everysec"}, {}, None),
        ({"appendonly": "yes", "appendfsync": "always"}, {}, None),
        ({"appendonly": "yes", "appendfsync": "no"}, {}, "appendfsync is 'no'"),
        ({}, {"aof_enabled": 1}, None),  # CONFIG refused: INFO says the AOF is on
        ({"appendonly": "no", "save": "3600 1"}, {}, "only RDB snapshots"),
        ({"appendonly": "no", "save": ""}, {"aof_enabled": 0}, "persistence is off"),
        ({}, {"aof_enabled": 0}, "persistence is off"),
    ],
)
def test_persistence_problem(
    config: dict[str, str], info: dict[str, Any], problem: str | None
) -> None:
    found = persistence_problem(config, info)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_redis_argv_refuses_an_unknown_fsync_policy(tmp_path: Path) -> None:
    argv = redis_argv("redis-server", 1, tmp_path, tmp_path / "log", appendfsync="always")
    assert argv[argv.index("--appendfsync") + 1] == "always"
    with pytest.raises(InvalidConfigError, match="appendfsync: must be one of"):
        redis_argv("redis-server", 1, tmp_path, tmp_path / "log", appendfsync="sometimes")


@pytest.mark.integration
def test_the_local_redis_keeps_its_data_across_a_restart(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        client = redis.Redis.from_url(server.url)
        try:
            config = client.config_get("append*")
            assert (config["appendonly"], config["appendfsync"]) == ("yes", "everysec")
            assert asyncio.run(check_persistence(server.url)) is None
            client.set("fluvio:rev", 41)
            client.incr("fluvio:rev")
        finally:
            client.close()
        server.restart()  # SIGTERM: the append-only file is replayed at start
        client = redis.Redis.from_url(server.url)
        try:
            assert client.get("fluvio:rev") == b"42"
        finally:
            client.close()
        aof = [p.name for p in (tmp_path / "redis").rglob("*.aof")]
        print(f"append-only files in the data dir: {sorted(aof)}")
        assert aof


@pytest.mark.integration
def test_a_redis_without_persistence_is_named(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", appendonly=False) as server:
        problem = asyncio.run(check_persistence(server.url))
    assert problem is not None and "persistence is off" in problem
