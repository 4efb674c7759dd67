"""The SC SIGKILLed and restarted under a group of member processes (T8 of the brief).

Records keep flowing from the SPUs while the SC is down; after the restart (same ports,
same Redis) the members resume: the generation and the grants are the ones published
before, nobody rejoins, and the members' combined output has no gap and no duplicate.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.launcher import process_alive
from tests.integration.group_faults import (
    SESSION_S,
    Producer,
    assert_no_overlapping_grants,
    duplicates,
    group_cluster,
    read_everything,
)
from tests.integration.group_member_proc import members
from tests.integration.helpers import make_topic, unique
from tests.polling import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 4


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with group_cluster(tmp_path / "cluster", spus=2) as running:
        yield running


def test_sc_sigkill_and_restart_is_invisible_to_the_group(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
        group = unique("g")

        def plan() -> tuple[int, set[tuple[int, str, int]]]:
            status = fluvio.admin().describe_group(group).group["status"]
            grants = {
                (g["partition"], g["memberId"], g["grantEpoch"]) for g in status["assignment"]
            }
            return status["generation"], grants

        with (
            Producer(fluvio, topic, PARTITIONS) as producer,
            members(
                # auto-commit only: a commit after each batch would wait for the SC
                cluster.endpoint,
                topic,
                group,
                tmp_path / "members",
                2,
                every=("--commit-every", "0"),
            ) as procs,
        ):
            wait_until(lambda: all(len(p.output().parts()) == 2 for p in procs), 30, "2/2")
            before = plan()
            pid = process_alive(cluster.pid_file("sc"))
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: process_alive(cluster.pid_file("sc")) is None, 10, "SC death")
            down = [len(p.output().records) for p in procs]
            # Shorter than the session timeout: hand-outs need no SC meanwhile.
            wait_until(
                lambda: all(len(p.output().records) > n for p, n in zip(procs, down, strict=True)),
                SESSION_S - 1.0,
                "records while the SC is down",
            )
            time.sleep(1.0)  # a longer outage (still within the session timeout)
            cluster.start()
            sent = producer.sent
            wait_until(lambda: producer.sent > sent + 30, 30, "produce after the restart")
            producer.stop()
            read_everything(procs, fluvio, topic, PARTITIONS)
            assert plan() == before  # no generation bump, no partition moved
            outputs = [p.output() for p in procs]
    assert duplicates([r for out in outputs for r in out.records]) == set()
    for out in outputs:
        assert not out.errors(), out.errors()
        assert not any("starts over" in msg for msg in out.logs())
    assert assert_no_overlapping_grants(cluster) > 0
