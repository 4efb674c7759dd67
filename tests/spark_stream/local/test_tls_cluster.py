"""A local cluster started with ``tls="mtls"`` (``fluvio cluster start --mtls``): every
port speaks TLS and demands client certificates; the profile carries the client's.

Real processes: Redis, the SC and two SPUs (replication at RF 2 runs over TLS between
them). Round trips through the client and the CLI; refusals arrive typed and quickly
(a plaintext client, a client without certificate, a client trusting another CA).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, Offset, TlsConfig
from spark_stream.errors import TlsError
from spark_stream.local.certs import ensure_local_certs
from spark_stream.local.cluster import LocalCluster
from spark_stream.net.connection import Connection
from spark_stream.protocol import ApiKey
from tests.polling import wait_until
from tests.spark_conftest import produce
from tests.tls_cluster import tls_cluster

pytestmark = pytest.mark.integration

REFUSAL_BOUND_S = 8.0
"""Refusals must not wait for the 10 s connect timeout (a hang guard, not a speed test)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with tls_cluster(tmp_path_factory.mktemp("mtls")) as running:
        yield running


@pytest.fixture
def no_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client with no profile: it uses only the TLS it is given."""
    monkeypatch.setenv("FLUVIO_PROFILE", str(tmp_path / "none.json"))


def _topic(fluvio: Fluvio, replicas: int = 2) -> str:
    name = f"tls-{uuid.uuid4().hex[:8]}"
    fluvio.admin().create_topic(name, partitions=1, replicationFactor=replicas)
    wait_until(lambda: _ready(fluvio, name), 30.0, f"topic {name} to have a leader")
    return name


def _ready(fluvio: Fluvio, topic: str) -> bool:
    try:
        infos = fluvio.topic_partitions(topic)
        fluvio.fetch_offsets(topic, 0)
    except Exception:
        return False
    return bool(infos) and infos[0].leader is not None


def test_profile_names_the_ca_and_client_certificate(cluster: LocalCluster) -> None:
    profile = json.loads(Path(os.environ["FLUVIO_PROFILE"]).read_text())
    tls = profile["profiles"]["local"]["tls"]
    assert tls == {
        "ca": str(cluster.certs.ca),
        "cert": str(cluster.certs.cert("client")),
        "key": str(cluster.certs.key("client")),
    }


def test_client_round_trip_replicated_over_tls(cluster: LocalCluster) -> None:
    with Fluvio.connect() as fluvio:  # the profile: endpoint and TLS
        assert fluvio.tls is not None and fluvio.tls.cert is not None
        topic = _topic(fluvio, replicas=2)
        values = [f"secret {i}" for i in range(50)]
        produce(fluvio, topic, values, acks="all")  # both replicas, over TLS
        got = [v for b in fluvio.fetch_batches(topic, 0, 0) for v in b.column("value").to_pylist()]
    assert [v.decode() for v in got] == values


def test_streamed_consume_of_large_replies_over_tls(cluster: LocalCluster) -> None:
    # Fetch replies past the sendfile size (64 KiB) through the network path: over TLS
    # the server writes file regions from memory (sendfile cannot encrypt).
    with Fluvio.connect() as fluvio:
        topic = _topic(fluvio, replicas=1)
        values = [f"{i:06d}" + "x" * 4000 for i in range(200)]
        produce(fluvio, topic, values, acks="all")
        consumer = fluvio.partition_consumer(topic, 0, max_bytes=1 << 20)
        got = [
            v
            for b in consumer.stream_batches(Offset.beginning(), stop_at_end=True)
            for v in b.column("value").to_pylist()
        ]
        remote = fluvio.fetch_batches(topic, 0, 0, local=False)
        fetched = [v for b in remote for v in b.column("value").to_pylist()]
    assert [v.decode() for v in got] == values
    assert [v.decode() for v in fetched] == values


def _timed_refusal(connect: object) -> TlsError:
    began = time.monotonic()
    with pytest.raises(TlsError) as caught:
        connect()  # type: ignore[operator]
    assert time.monotonic() - began < REFUSAL_BOUND_S, "the refusal waited for a timeout"
    return caught.value


@pytest.mark.usefixtures("no_profile")
def test_plaintext_client_is_refused_with_a_clear_error(cluster: LocalCluster) -> None:
    err = _timed_refusal(lambda: Fluvio.connect(cluster.endpoint))
    assert "speaks TLS on this port" in str(err)


def test_plaintext_request_to_an_spu_port_is_refused(cluster: LocalCluster) -> None:
    import asyncio

    port = cluster.layout.spu_ports[str(cluster.layout.spu_ids[0])][0]

    async def main() -> None:
        async with await Connection.open("127.0.0.1", port) as conn:
            await conn.request(ApiKey.API_VERSIONS, {}, timeout=10)

    with pytest.raises(TlsError, match="spu-5001-public speaks TLS on this port"):
        asyncio.run(main())


@pytest.mark.usefixtures("no_profile")
def test_client_without_certificate_is_refused(cluster: LocalCluster) -> None:
    tls = TlsConfig(ca=str(cluster.certs.ca))
    err = _timed_refusal(lambda: Fluvio.connect(cluster.endpoint, tls=tls))
    assert "requires a client certificate" in str(err)


@pytest.mark.usefixtures("no_profile")
def test_client_trusting_another_ca_is_refused_naming_the_certificate(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    other = ensure_local_certs(tmp_path / "other")
    err = _timed_refusal(
        lambda: Fluvio.connect(cluster.endpoint, tls=other.client_config(mutual=True))
    )
    assert "server's certificate is not trusted by the client's CA" in str(err)
    assert "CERTIFICATE_VERIFY_FAILED" in str(err)


def test_cli_round_trip_through_the_profile(cluster: LocalCluster) -> None:
    env = dict(os.environ)

    def fluvio(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "spark_stream.cli", *args],
            input=stdin, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    topic = f"cli-{uuid.uuid4().hex[:8]}"
    fluvio("topic", "create", topic, "-p", "1", "-r", "2")
    fluvio("produce", topic, "--acks", "all", stdin="".join(f"line {i}\n" for i in range(20)))
    out = fluvio("consume", topic, "-B", "-d").splitlines()
    assert out == [f"line {i}" for i in range(20)]


def test_cli_plaintext_flags_are_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    env = {**os.environ, "FLUVIO_PROFILE": str(tmp_path / "none.json")}
    proc = subprocess.run(
        [sys.executable, "-m", "spark_stream.cli", "--endpoint", cluster.endpoint,
         "--ca-file", str(cluster.certs.ca), "topic", "list"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "requires a client certificate" in proc.stderr


def test_cli_cluster_start_tls_round_trip(tmp_path: Path) -> None:
    """``fluvio cluster start --tls`` (an SPU group, no client certificates): the CLI
    finds the CA in the profile; the cluster's ports refuse plaintext."""
    env = {**os.environ, "FLUVIO_PROFILE": str(tmp_path / "profile.json")}
    data = str(tmp_path / "cluster")

    def fluvio(*args: str, stdin: str | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "spark_stream.cli", *args],
            input=stdin, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert proc.returncode == 0 or not check, proc.stderr
        return proc.stdout + proc.stderr

    try:
        fluvio(
            "cluster", "start", "--data-dir", data, "--sc-port", "0", "--tls", "--timeout", "60s"
        )
        profile = json.loads((tmp_path / "profile.json").read_text())["profiles"]["local"]
        assert profile["tls"] == {"ca": str(Path(data) / "tls" / "ca.pem")}
        fluvio("topic", "create", "cli-tls")
        fluvio("produce", "cli-tls", stdin="".join(f"m{i}\n" for i in range(10)))
        assert fluvio("consume", "cli-tls", "-B", "-d").splitlines() == [f"m{i}" for i in range(10)]
        plain = subprocess.run(
            [sys.executable, "-m", "spark_stream.cli", "--endpoint", profile["endpoint"],
             "topic", "list"],
            env={**env, "FLUVIO_PROFILE": str(tmp_path / "none.json")},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert plain.returncode == 1 and "speaks TLS on this port" in plain.stderr
    finally:
        fluvio("cluster", "stop", "--data-dir", data, check=False)
