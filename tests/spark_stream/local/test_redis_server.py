"""RedisServer: a real redis-server child, started, restarted and stopped by pid."""

from __future__ import annotations

import os
import socket
import stat
import time
from pathlib import Path

import psutil
import pytest
import redis

from spark_stream.errors import ServerStartError
from spark_stream.local import RedisServer, find_redis_server, free_port

pytestmark = pytest.mark.integration


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_finds_a_binary() -> None:
    path = find_redis_server()
    assert os.access(path, os.X_OK) and path.endswith("redis-server")


def test_free_port_never_hands_out_a_port_twice() -> None:
    """Callers take two ports before binding either (an SC's public and private ones);
    the kernel alone offers a just-released port again (4 repeats in 500 on this box)."""
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


def test_free_ports_are_below_the_kernels_range_for_outgoing_connections() -> None:
    """A port from that range can go to a client socket before the caller binds it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert all(20_000 <= p < low for p in ports), ports


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_start_restart_stop(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "data")
    try:
        server.start()
        pid, port = server.pid, server.port
        assert pid is not None and server.running
        assert server.url == f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(server.url)
        try:
            client.set("k", "v")
            server.restart()
            assert server.port == port and server.pid not in (None, pid)
            assert _gone(pid)
            assert client.get("k") == b"v"  # AOF replayed; the client reconnects
        finally:
            client.close()
        assert (tmp_path / "data" / "redis.log").is_file()
    finally:
        server.stop()
    assert not server.running and server.pid is None
    server.stop()  # idempotent


def test_a_password_is_required_and_never_on_the_command_line(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "data", password="pw-0123456789") as server:
        anonymous = redis.Redis.from_url(server.url)
        authed = redis.Redis.from_url(server.url, password="pw-0123456789")
        try:
            with pytest.raises(redis.AuthenticationError):
                anonymous.ping()
            assert authed.ping() is True
        finally:
            anonymous.close()
            authed.close()
        assert server.pid is not None
        assert not any("pw-0123" in arg for arg in psutil.Process(server.pid).cmdline())
        conf = tmp_path / "data" / "auth.conf"
        assert stat.S_IMODE(conf.stat().st_mode) == 0o600


def test_context_manager_stops_by_pid(tmp_path: Path) -> None:
    with RedisServer(tmp_path) as server:
        pid = server.pid
        assert pid is not None and not _gone(pid)
    assert _gone(pid)


def test_taken_fixed_port_fails_fast(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "a") as first:
        second = RedisServer(tmp_path / "b", port=first.port)
        with pytest.raises(ServerStartError, match="Address already in use|exited"):
            second.start()
        assert not second.running
        assert first.running


def test_missing_binary(tmp_path: Path) -> None:
    server = RedisServer(tmp_path, binary=str(tmp_path / "no-such-redis"))
    with pytest.raises(ServerStartError, match="cannot run"):
        server.start()


def test_silent_server_times_out_and_is_killed(tmp_path: Path) -> None:
    # A "server" that never answers and ignores SIGTERM: start() gives up, SIGKILL ends it.
    fake = tmp_path / "fake-redis"
    fake.write_text("#!/bin/sh\ntrap '' TERM\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    server = RedisServer(tmp_path / "d", binary=str(fake), start_timeout=0.5, stop_timeout=0.5)
    began = time.monotonic()
    with pytest.raises(ServerStartError, match="did not answer PING"):
        server.start()
    assert time.monotonic() - began < 20  # bounded, not a speed claim
    assert not server.running
    children = psutil.Process().children(recursive=True)
    assert not any(c.cmdline()[-2:] == ["sleep", "60"] for c in children if not _gone(c.pid))
