"""The SC's Redis client: ``redis+sentinel://`` URLs (pure parsing), and a real failover
(a master, a replica and a Sentinel, all ``redis-server`` processes)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import redis

from sc.kv import RedisKvStore
from sc.kv.client import SentinelUrl, parse_sentinel_url
from spark_stream.local import RedisServer, find_redis_server, free_port
from spark_stream.supervision import spawn, terminate
from tests.sc.kv.helpers import topic


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("redis://127.0.0.1:6379/0", None),
        (
            "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/fluvio",
            SentinelUrl((("10.0.0.1", 26379), ("10.0.0.2", 26379)), "fluvio"),
        ),
        (
            "redis+sentinel://:s%40cret@h:26379/fluvio/3",
            SentinelUrl((("h", 26379),), "fluvio", 3, None, "s@cret"),
        ),
        (
            "redis+sentinel://user:pw@[::1]:26379/m",
            SentinelUrl((("::1", 26379),), "m", 0, "user", "pw"),
        ),
    ],
)
def test_parse_sentinel_url(url: str, parsed: SentinelUrl | None) -> None:
    assert parse_sentinel_url(url) == parsed


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+sentinel://h:26379", "the path must be"),
        ("redis+sentinel://h:26379/a/b/c", "the path must be"),
        ("redis+sentinel://h:26379/m/x", "database 'x'"),
        ("redis+sentinel://h/m", "must be host:port"),
        ("redis+sentinel://h:0/m", "must be host:port"),
    ],
)
def test_bad_sentinel_urls_are_value_errors(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_sentinel_url(url)


def _master_port(sentinel_port: int) -> int | None:
    client = redis.Redis(port=sentinel_port, socket_timeout=1)
    try:
        answer = client.execute_command("SENTINEL", "get-master-addr-by-name", "fluvio")
        return int(answer[1]) if answer else None
    except redis.RedisError:
        return None
    finally:
        client.close()


def _wait(check: object, timeout: float, what: str) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)  # bounded poll of another process


@pytest.mark.integration
def test_the_store_follows_a_sentinel_failover(tmp_path: Path) -> None:
    master = RedisServer(tmp_path / "master")
    replica = RedisServer(tmp_path / "replica")
    sentinel_proc = None
    try:
        master.start()
        replica.start()
        client = redis.Redis(port=replica.port)
        client.execute_command("REPLICAOF", "127.0.0.1", str(master.port))
        client.close()
        port = free_port()
        conf = tmp_path / "sentinel.conf"
        conf.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {tmp_path}\n"
            f"sentinel monitor fluvio 127.0.0.1 {master.port} 1\n"
            "sentinel down-after-milliseconds fluvio 1000\n"
            "sentinel failover-timeout fluvio 5000\n"
        )
        argv = [find_redis_server(), str(conf), "--sentinel"]
        sentinel_proc = spawn(argv, tmp_path / "sentinel.log", new_session=False)
        _wait(lambda: _master_port(port) == master.port, 30, "the Sentinel to watch")

        async def body() -> None:
            kv = RedisKvStore(f"redis+sentinel://127.0.0.1:{port}/fluvio/0")
            try:
                await kv.create(topic("before"))
                primary = redis.Redis(port=master.port)
                assert primary.execute_command("WAIT", 1, 5000) == 1  # on the replica too
                primary.close()
                master.stop()
                await asyncio.to_thread(
                    _wait, lambda: _master_port(port) == replica.port, 60, "the failover"
                )
                await kv.create(topic("after"))  # retried until the promoted replica answers
                names, _ = await kv.list_objects("Topic")
                assert sorted(t.name for t in names) == ["after", "before"]
            finally:
                await kv.close()

        asyncio.run(body())
    finally:
        if sentinel_proc is not None:
            terminate(sentinel_proc, 5.0, name="sentinel")
        replica.stop()
        master.stop()
