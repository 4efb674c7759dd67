"""A local cluster with TLS and client tokens both on (``fluvio cluster start --tls
--auth``): the token is presented over the encrypted connection, and both checks hold.

Real processes: Redis, the SC and one SPU. A client that trusts the cluster's CA and
presents a token round-trips records; one with the CA and no token is refused by the SC
and by the SPU over TLS (``AuthenticationError``); one with the token and no CA is
refused by the TLS port (``TlsError``).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, TlsConfig
from spark_stream.errors import AuthenticationError, TlsError
from spark_stream.local.cluster import LocalCluster
from spark_stream.net.connection import Connection
from spark_stream.net.tls import client_context
from spark_stream.protocol import FetchOffsetsRequest
from tests.integration.helpers import make_topic, unique
from tests.spark_conftest import produce
from tests.tls_cluster import tls_cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with tls_cluster(tmp_path_factory.mktemp("tlsauth"), mode="tls", spus=1, auth=True) as c:
        yield c


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No profile and no ``FLUVIO_TOKEN``: a client has only what it is given."""
    monkeypatch.setenv("FLUVIO_PROFILE", str(tmp_path / "none.json"))
    monkeypatch.delenv("FLUVIO_TOKEN", raising=False)


def test_the_profile_carries_the_ca_and_the_token(cluster: LocalCluster) -> None:
    entry = json.loads(Path(os.environ["FLUVIO_PROFILE"]).read_text())["profiles"]["local"]
    assert entry["tls"] == {"ca": str(cluster.certs.ca)}
    assert entry["token"] == cluster.admin_token


def test_ca_and_token_round_trip_and_no_token_is_refused_over_tls(
    cluster: LocalCluster, bare: None
) -> None:
    tls = TlsConfig(ca=str(cluster.certs.ca))
    with Fluvio.connect(cluster.endpoint, tls=tls, token=cluster.admin_token) as fluvio:
        assert fluvio.tls == tls
        topic = make_topic(fluvio, unique("tlsauth"), replication=1)
        leader = fluvio.topic_partitions(topic)[0].leader_endpoint
        values = [f"secret {i}" for i in range(20)]
        produce(fluvio, topic, values, acks="all")
        got = [v for b in fluvio.fetch_batches(topic, 0, 0) for v in b.column("value").to_pylist()]
    assert [v.decode() for v in got] == values

    with pytest.raises(AuthenticationError, match="requires a client token"):
        Fluvio.connect(cluster.endpoint, tls=tls, timeout=30)
    with pytest.raises(TlsError, match="speaks TLS"):
        Fluvio.connect(cluster.endpoint, token=cluster.admin_token, timeout=30)

    async def fetch_offsets_over_tls_without_token() -> None:
        assert leader is not None
        host, port = leader.rsplit(":", 1)
        context = client_context(tls)
        async with await Connection.open(host, int(port), tls=context) as conn:
            await conn.call(FetchOffsetsRequest(topic, 0), timeout=30)

    with pytest.raises(AuthenticationError, match="FETCH_OFFSETS refused"):
        asyncio.run(fetch_offsets_over_tls_without_token())
