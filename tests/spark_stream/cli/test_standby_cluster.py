"""``fluvio cluster start --standby-scs 1``: a standby SC beside the SC, and a takeover.

The CLI as subprocesses (the group SPU mode: the SC's provisioner runs the SPU, and hands
it both SCs' private addresses). SIGKILL the active SC: the standby takes over, the CLI
(whose profile lists both SCs) keeps working, and the SPU reconnects to the new SC.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from spark_stream.local.cluster import LocalCluster
from spark_stream.local.launcher import process_alive
from tests.polling import wait_until
from tests.spark_stream.cli.test_round_trip import fluvio

pytestmark = pytest.mark.integration


def test_a_standby_sc_takes_over_from_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    env = {**os.environ, "FLUVIO_PROFILE": str(tmp_path / "profile.json")}
    try:
        fluvio(
            env, "cluster", "start", "--data-dir", str(data), "--spus", "1", "--sc-port", "0",
            "--standby-scs", "1",
        )  # fmt: skip
        status = json.loads(fluvio(env, "cluster", "status", "-O", "json").stdout)
        names = {p["name"]: p["running"] for p in status["processes"]}
        assert names == {"redis": True, "sc": True, "sc-standby-1": True, "spu-5001": True}
        assert status["endpoint"].count(",") == 1  # both SCs in the profile
        fluvio(env, "topic", "create", "before")
        fluvio(env, "produce", "before", stdin="one\n")

        cluster = LocalCluster(data)
        pid = process_alive(cluster.pid_file("sc"))
        assert pid is not None
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        standby_log = cluster.log_file("sc-standby-1")
        wait_until(
            lambda: "sc active: took the lease" in standby_log.read_text(),
            60,
            "the standby to take over",
        )
        print(f"the standby SC took over {time.monotonic() - killed:.2f}s after the SIGKILL")

        # The CLI follows the active SC; the SPU reconnected to it (new topics get leaders).
        fluvio(env, "topic", "create", "after")
        fluvio(env, "produce", "after", stdin="two\n")
        fluvio(env, "produce", "before", stdin="three\n")
        assert fluvio(env, "consume", "before", "-B", "-d").stdout.split() == ["one", "three"]
        assert fluvio(env, "consume", "after", "-B", "-d").stdout.split() == ["two"]
        after = json.loads(fluvio(env, "cluster", "status", "-O", "json").stdout)
        assert after["running"]  # the standby SC serves
        assert [s["status"] for s in after["spus"]] == ["Online"]  # the new SC's view
        assert {p["name"]: p["running"] for p in after["processes"]}["sc"] is False

        stop = fluvio(env, "cluster", "stop", "--data-dir", str(data))
        assert "sc-standby-1" in stop.stdout
    finally:
        fluvio(env, "cluster", "delete", "--data-dir", str(data), check=False)
