"""Observing a local cluster from the CLI: ``cluster start --metrics`` and the URLs in
``cluster status -O json`` (scraped here), and ``--log-level`` showing the client's own
steps on stderr. The CLI runs as a child process, as a user runs it, so its logging
setup is its own (pytest's handlers would swallow an in-process one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_stream.local.cluster import LocalCluster
from tests.harness.processes import REPO
from tests.harness.scrape import scrape

pytestmark = pytest.mark.integration


def _cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "FLUVIO_PROFILE": str(tmp_path / "profile.json"),
        "HOME": str(tmp_path),
    }
    env.pop("FLUVIO_ENDPOINT", None)
    env.pop("FLUVIO_LOG_LEVEL", None)

    def fluvio(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "spark_stream.cli", *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    return fluvio


def test_metrics_urls_in_status_and_client_steps_at_debug(tmp_path: Path) -> None:
    fluvio = _cli(tmp_path)
    data = tmp_path / "cluster"
    try:
        started = fluvio("cluster", "start", "--metrics", "--data-dir", str(data), "--sc-port", "0")
        assert started.returncode == 0, started.stderr

        shown = fluvio("cluster", "status", "--data-dir", str(data), "-O", "json")
        assert shown.returncode == 0, shown.stderr
        urls = {p["name"]: p["metrics_url"] for p in json.loads(shown.stdout)["processes"]}
        assert set(urls) == {"redis", "sc", "spu-5001"}
        assert urls["redis"] is None
        assert all(urls[name].startswith("http://127.0.0.1:") for name in ("sc", "spu-5001"))
        assert scrape(urls["sc"]).get("fluvio_sc_spus", resolution="Online") == 1
        assert scrape(urls["spu-5001"]).get("fluvio_spu_under_replicated_partitions") == 0

        table = fluvio("cluster", "status", "--data-dir", str(data))
        assert urls["spu-5001"] in table.stdout

        assert fluvio("topic", "create", "logged").returncode == 0
        loud = fluvio("--log-level", "DEBUG", "produce", "logged", stdin="a\nb\n")
        assert loud.returncode == 0, loud.stderr
        for step in (
            "INFO spark_stream.client.fluvio connecting to the SC at 127.0.0.1:",
            "INFO spark_stream.client.fluvio connected to the SC at",
            "DEBUG spark_stream.client.metadata metadata snapshot revision=",
            "INFO spark_stream.client.pool connecting to SPU 5001 at 127.0.0.1:",
            "DEBUG spark_stream.client.leader ProduceRequest logged-0 -> leader SPU 5001",
        ):
            assert step in loud.stderr, loud.stderr
        info = fluvio("--log-level", "INFO", "produce", "logged", stdin="c\n")
        assert "connecting to SPU 5001" in info.stderr and "DEBUG" not in info.stderr
        quiet = fluvio("produce", "logged", stdin="d\n")
        assert quiet.returncode == 0 and quiet.stderr == ""
        assert (
            scrape(urls["spu-5001"]).get(
                "fluvio_spu_produced_records_total", topic="logged", partition="0"
            )
            == 4
        )
    finally:
        LocalCluster(data).stop()
