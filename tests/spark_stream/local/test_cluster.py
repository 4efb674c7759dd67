"""The local cluster: idempotent start, stop keeping data, status, bounded failures."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import psutil
import pytest

from spark_stream.client.profile import load_profile
from spark_stream.errors import InvalidConfigError, ServerStartError
from spark_stream.local.cluster import ClusterLayout, LocalCluster, process_alive
from tests.harness.local_cluster import kill_spu


def test_layout_ids_and_bad_options(tmp_path: Path) -> None:
    assert ClusterLayout(spus=3).spu_ids == [5001, 5002, 5003]
    with pytest.raises(InvalidConfigError, match="spu_mode"):
        LocalCluster(tmp_path, spu_mode="cloud")
    with pytest.raises(InvalidConfigError, match="spus"):
        LocalCluster(tmp_path, spus=-1)
    (tmp_path / "cluster.json").write_text("{not json")
    with pytest.raises(InvalidConfigError, match="cluster.json"):
        LocalCluster(tmp_path)


def test_pid_files_name_one_process_only(tmp_path: Path) -> None:
    me = psutil.Process()
    pid_file = tmp_path / "me.pid"
    pid_file.write_text(f"{me.pid} {me.create_time()!r}\n")
    assert process_alive(pid_file) == os.getpid()
    pid_file.write_text(f"{me.pid} {me.create_time() - 100!r}\n")  # a recycled pid
    assert process_alive(pid_file) is None
    pid_file.write_text("garbage")
    assert process_alive(pid_file) is None
    assert process_alive(tmp_path / "missing.pid") is None


@pytest.mark.integration
def test_a_failing_sc_is_reported_with_its_log(tmp_path: Path) -> None:
    cluster = LocalCluster(
        tmp_path,
        sc_port=0,
        python="/bin/false",
        start_timeout=10,
        profile=tmp_path / "profile.json",
    )
    started = time.monotonic()
    try:
        with pytest.raises(ServerStartError, match="sc exited during start"):
            cluster.start()
    finally:
        cluster.stop()
    assert time.monotonic() - started < 10
    assert not (tmp_path / "profile.json").exists()


@pytest.mark.integration
def test_taken_sc_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        cluster = LocalCluster(tmp_path, sc_port=port, profile=tmp_path / "profile.json")
        try:
            with pytest.raises(ServerStartError, match=f"port {port}"):
                cluster.start()
        finally:
            cluster.stop()


@pytest.mark.integration
def test_custom_spus_start_stop_restart_keep_data(tmp_path: Path) -> None:
    profile = tmp_path / "profile.json"
    cluster = LocalCluster(tmp_path / "c", spus=2, sc_port=0, spu_mode="custom", profile=profile)
    try:
        status = cluster.start()
        assert status.running
        assert {s["id"] for s in status.spus} == {5001, 5002}
        assert {s["type"] for s in status.spus} == {"Custom"}
        assert load_profile(profile).endpoint == cluster.endpoint
        pids = {p.name: p.pid for p in status.processes}
        assert all(pids.values())

        again = LocalCluster(tmp_path / "c", profile=profile).start()
        assert {p.name: p.pid for p in again.processes} == pids

        assert kill_spu(cluster, 5002)
        assert cluster.spu_pid(5002) is None
        restarted = LocalCluster(tmp_path / "c", profile=profile).start()  # completes it
        assert restarted.running and cluster.spu_pid(5002) not in (None, pids["spu-5002"])

        stopped = cluster.stop()
        assert set(stopped) == {"sc", "spu-5001", "spu-5002", "redis"}
        assert not cluster.status().running
        assert all(
            not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
            for pid in pids.values()
            if pid
        )
        assert (tmp_path / "c" / "redis").is_dir()

        endpoint = cluster.endpoint
        back = LocalCluster(tmp_path / "c", profile=profile)
        assert back.start().running and back.endpoint == endpoint  # same ports again
    finally:
        LocalCluster(tmp_path / "c").stop()
