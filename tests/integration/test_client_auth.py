"""Client authentication and authorisation with real processes (Redis, SC, SPUs).

One cluster with auth on (``LocalCluster(auth=True)``): a client without a token is
refused by the SC and by an SPU; each token does what its grants allow and is refused
the rest with the topic and permission named; the CLI uses the profile's token or
``--token``. A cluster with auth off takes clients with or without a token, as before.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from spark_stream.auth import Claims, load_key, parse_grant, sign
from spark_stream.client import Fluvio
from spark_stream.errors import AuthenticationError, PermissionDeniedError
from spark_stream.local.cluster import LocalCluster
from spark_stream.net.connection import Connection
from spark_stream.protocol import FetchOffsetsRequest
from tests.integration.helpers import make_topic, running_cluster, unique

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("auth"), spus=1, auth=True) as cluster:
        yield cluster


def token(cluster: LocalCluster, *grants: str, principal: str = "app") -> str:
    claims = Claims(principal, tuple(parse_grant(g) for g in grants))
    return sign(claims, load_key(cluster.auth_key_file))


def produce(client: Fluvio, topic: str, values: list[str]) -> None:
    producer = client.topic_producer(topic, acks="all", linger_ms=0)
    try:
        producer.send_batch(pa.table({"value": pa.array(values)})).result(timeout=60)
    finally:
        producer.close()


def read_values(client: Fluvio, topic: str) -> list[str]:
    end = client.fetch_offsets(topic, 0).hw
    values: list[str] = []
    for batch in client.fetch_batches(topic, 0, 0, end):
        values += [bytes(v).decode() for v in batch.column("value").to_pylist()]
    return values


def test_no_token_is_refused_by_the_sc_and_by_the_spu(secured: LocalCluster) -> None:
    admin = Fluvio.connect(secured.endpoint, token=secured.admin_token)
    try:
        topic = make_topic(admin, unique("auth"))
        leader = admin.topic_partitions(topic)[0].leader_endpoint
    finally:
        admin.close()
    with pytest.raises(AuthenticationError, match="requires a client token"):
        Fluvio.connect(secured.endpoint, timeout=30)
    with pytest.raises(AuthenticationError, match="not signed by this cluster's key"):
        Fluvio.connect(secured.endpoint, token=sign(Claims("x", ()), b"k" * 32), timeout=30)

    async def fetch_offsets_without_token() -> None:
        assert leader is not None
        host, port = leader.rsplit(":", 1)
        async with await Connection.open(host, int(port)) as conn:
            await conn.call(FetchOffsetsRequest(topic, 0), timeout=30)

    with pytest.raises(AuthenticationError, match="FETCH_OFFSETS refused"):
        asyncio.run(fetch_offsets_without_token())


def test_each_token_does_what_its_grants_allow(secured: LocalCluster) -> None:
    with Fluvio.connect(secured.endpoint, token=secured.admin_token) as admin:
        topic = make_topic(admin, unique("orders"))  # admin creates
    producer = Fluvio.connect(secured.endpoint, token=token(secured, "orders-*=produce"))
    try:
        produce(producer, topic, ["a", "b", "c"])
        with pytest.raises(PermissionDeniedError) as refused:
            producer.fetch_offsets(topic, 0)
        assert f"lacks the consume permission on topic {topic!r}" in str(refused.value)
        with pytest.raises(PermissionDeniedError, match="admin permission on topic 'orders-new'"):
            producer.admin().create_topic("orders-new", partitions=1)
        with pytest.raises(PermissionDeniedError, match="consume permission"):
            producer.group_consumer(topic, group=unique("g"))  # a join needs consume
    finally:
        producer.close()
    consumer = Fluvio.connect(secured.endpoint, token=token(secured, f"{topic}=consume"))
    try:
        assert read_values(consumer, topic) == ["a", "b", "c"]
        with pytest.raises(PermissionDeniedError, match="lacks the produce permission"):
            produce(consumer, topic, ["d"])
        member = consumer.group_consumer(topic, group=unique("g"), auto_offset_reset="earliest")
        member.close()
    finally:
        consumer.close()


def fluvio_cli(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spark_stream.cli", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_uses_the_profile_token_and_token_flag(secured: LocalCluster, tmp_path: Path) -> None:
    profile = secured.profile
    assert profile is not None and json.loads(profile.read_text())["profiles"]["local"]["token"]
    env = {**os.environ, "FLUVIO_PROFILE": str(profile)}
    env.pop("FLUVIO_TOKEN", None)
    topic = unique("cli")
    created = fluvio_cli(env, "topic", "create", topic)  # the profile's admin token
    assert created.returncode == 0, created.stderr
    minted = fluvio_cli(
        env, "token", "create", "--data-dir", str(secured.data_dir), "--principal", "writer",
        "--grant", f"{topic}=produce",
    )  # fmt: skip
    assert minted.returncode == 0, minted.stderr
    writer = minted.stdout.strip()
    sent = fluvio_cli(env, "--token", writer, "produce", topic, stdin="one\ntwo\n")
    assert sent.returncode == 0, sent.stderr
    refused = fluvio_cli(env, "--token", writer, "consume", topic, "-B", "-d")
    assert refused.returncode == 1
    assert f"'writer' lacks the consume permission on topic {topic!r}" in refused.stderr
    read = fluvio_cli(env, "consume", topic, "-B", "-d")
    assert read.returncode == 0 and read.stdout.splitlines() == ["one", "two"], read.stderr
    nobody = {**env, "FLUVIO_PROFILE": str(tmp_path / "none.json")}
    anonymous = fluvio_cli(nobody, "--endpoint", secured.endpoint, "topic", "list")
    assert anonymous.returncode == 1 and "requires a client token" in anonymous.stderr


def test_auth_off_takes_clients_with_or_without_a_token(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "open", spus=1) as cluster:
        assert cluster.admin_token is None
        profile = cluster.profile
        assert profile is not None and "token" not in profile.read_text()
        for given in (None, "fv1.any.thing"):
            with Fluvio.connect(cluster.endpoint, token=given) as client:
                topic = make_topic(client, unique("open"))
                produce(client, topic, ["x"])
                assert read_values(client, topic) == ["x"]
