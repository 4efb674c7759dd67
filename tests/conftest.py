"""Shared fixtures for the whole suite.

``redis_server`` is one real ``redis-server`` per test session (AOF on, loopback, a
free port), stopped by pid at the end; ``redis_url`` hands a test that server after
``FLUSHALL``. Tests using either are integration tests: mark them
``@pytest.mark.integration``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from spark_stream.local import RedisServer


@pytest.fixture(scope="session", autouse=True)
def _no_caller_endpoint() -> Iterator[None]:
    """Hide the caller's ``FLUVIO_ENDPOINT``: it outranks every test's profile."""
    saved = os.environ.pop("FLUVIO_ENDPOINT", None)
    yield
    if saved is not None:
        os.environ["FLUVIO_ENDPOINT"] = saved


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real Redis for the session; tests must not stop or restart it."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session Redis's URL, emptied (``FLUSHALL``) for this test."""
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.flushall()
    finally:
        client.close()
    return redis_server.url


# The Spark session (once per source of format("fluvio")) and the cluster fixtures
# (fluvio_cluster, fluvio, new_topic).
pytest_plugins = ["tests.spark_conftest"]
