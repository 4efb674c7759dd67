"""``fluvio consumer-group reset`` on a real cluster: time modes resolved at the leaders."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.cli import main
from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.integration.gate_audits import AUDIT_ENV, assert_no_overlapping_grants
from tests.integration.helpers import make_topic, running_cluster
from tests.sc.groups.member import RawMember

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("groups"), spus=1, env=AUDIT_ENV) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_overlapping_grants(cluster: LocalCluster) -> Iterator[None]:
    yield
    assert_no_overlapping_grants(cluster)


def test_reset_to_datetime_and_by_duration(
    cluster: LocalCluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with Fluvio.connect(cluster.endpoint) as fluvio:
        topic = make_topic(fluvio, partitions=2)
        producer = fluvio.topic_producer(topic, acks="all")
        futures = [producer.send(None, b"v%d" % i, partition=i % 2) for i in range(6)]
        producer.flush(timeout=30)
        assert all(f.exception(30) is None for f in futures)
    port = int(cluster.endpoint.rsplit(":", 1)[1])

    async def commit_and_leave() -> None:
        member = RawMember(port, "billing", [topic])
        await member.join()
        tps = sorted(member.assigned())
        results = await member.commit({tp: (3, member.grant_epoch(tp)) for tp in tps})
        assert [r["errorCode"] for r in results] == [0, 0]
        await member.leave()
        await member.close()

    asyncio.run(asyncio.wait_for(commit_and_leave(), 60))

    def reset(*flags: str) -> list[dict[str, object]]:
        capsys.readouterr()
        argv = ["--endpoint", cluster.endpoint, "consumer-group", "reset", "billing"]
        assert main([*argv, "--topic", topic, *flags, "-O", "json"]) == 0
        rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
        return sorted(rows, key=lambda r: str(r["partition"]))

    # Long ago: the first offset of each partition. Dry run: nothing written.
    rows = reset("--to-datetime", "2000-01-01T00:00:00Z")
    assert [(r["old"], r["new"]) for r in rows] == [(3, 0), (3, 0)]
    rows = reset("--to-datetime", "2000-01-01T00:00:00Z")
    assert [r["old"] for r in rows] == [3, 3]
    # In the future: no record that recent, so the high watermark.
    rows = reset("--to-datetime", "2100-01-01T00:00:00+00:00", "--execute")
    assert [r["new"] for r in rows] == [3, 3]
    rows = reset("--by-duration", "1d", "--execute")
    assert [(r["old"], r["new"]) for r in rows] == [(3, 0), (3, 0)]
    with Fluvio.connect(cluster.endpoint) as fluvio:
        assert fluvio.admin().fetch_offsets("billing") == {(topic, 0): 0, (topic, 1): 0}
    capsys.readouterr()
    assert (
        main(
            [
                "--endpoint",
                cluster.endpoint,
                "consumer-group",
                "reset",
                "billing",
                "--topic",
                topic,
                "--to-datetime",
                "yesterday",
            ]
        )
        != 0
    )
    assert "--to-datetime" in capsys.readouterr().err
    del tmp_path
