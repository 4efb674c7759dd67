"""``fluvio topic create --tier/--local-retention`` end to end, as subprocesses: the
cluster's default tier, the TIER column, and ``consume -B`` reading history that only
the tier still holds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until
from tests.spark_stream.cli.test_round_trip import fluvio

pytestmark = pytest.mark.integration


def test_tiered_topic_from_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    env = {
        **os.environ,
        "FLUVIO_PROFILE": str(tmp_path / "profile.json"),
        "FLUVIO_SPU_TIER_INTERVAL_S": "0.2",
        "FLUVIO_SPU_RETENTION_INTERVAL_S": "0.5",
    }
    try:
        fluvio(env, "cluster", "start", "--data-dir", str(data), "--spus", "1", "--sc-port", "0")
        bad = fluvio(env, "topic", "create", "bad", "--tier", "nosuchfs://x", check=False)
        assert bad.returncode == 1 and "fsspec knows no protocol 'nosuchfs'" in bad.stderr
        lonely = fluvio(env, "topic", "create", "x", "--local-retention", "2h",
                        "--retention-time", "1h", check=False)  # fmt: skip
        assert lonely.returncode == 1 and "local retention 7200s is longer" in lonely.stderr

        fluvio(env, "topic", "create", "hist", "--segment-size", "1Ki", "--local-retention", "1s")
        topic = json.loads(fluvio(env, "topic", "describe", "hist", "-O", "json").stdout)
        tier = data / "tier" / "hist"
        assert topic["spec"]["tier"] == str(tier)  # the cluster's default tier root
        assert topic["spec"]["localRetentionSecs"] == 1
        rows = json.loads(fluvio(env, "topic", "list", "-O", "json").stdout)
        assert [(r["tier"], r["local_retention_secs"]) for r in rows] == [(str(tier), 1)]

        sent = []
        for n in range(6):  # each file is one batch of about 3 KiB: a segment each
            path = tmp_path / f"f{n}.txt"
            lines = [f"{n}-{i}-{'x' * 90}" for i in range(30)]
            path.write_text("".join(f"{line}\n" for line in lines))
            fluvio(env, "produce", "hist", "-f", str(path), "--acks", "all")
            sent += lines
        replica = next(data.glob("spus/spu-*/hist-0"))
        first = replica / f"{0:020d}.log"
        wait_until(lambda: not first.exists(), 60, "local retention of a tiered segment")

        def tier_cell() -> str:
            (part,) = json.loads(fluvio(env, "partition", "list", "-O", "json").stdout)
            return str(part["tier"])

        wait_until(lambda: tier_cell().startswith("ok: "), 30, "the TIER column")
        assert " files [0, " in tier_cell()
        assert sorted(p.name for p in (tier / "partition=0").glob("*.parquet"))

        out = fluvio(env, "consume", "hist", "-B", "-d", "-O", "json").stdout.splitlines()
        records = [json.loads(line) for line in out]
        assert [r["offset"] for r in records] == list(range(len(sent)))
        assert [r["value"] for r in records] == sent
    finally:
        LocalCluster(data).stop()
