"""The local cluster: idempotent start, stop keeping data, status, bounded failures."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil
import pytest

from spark_stream.client import Fluvio
from spark_stream.client.profile import load_profile
from spark_stream.errors import InvalidConfigError, ServerStartError
from spark_stream.local import free_port
from spark_stream.local.cluster import (
    ClusterLayout,
    LocalCluster,
    option_conflicts,
)
from spark_stream.local.launcher import process_alive
from spark_stream.local.redis_server import redis_problem
from spark_stream.spu_identity import SECRET_FILE, read_secret_file
from spark_stream.supervision import running, terminate
from tests.harness.local_cluster import kill_spu
from tests.polling import wait_until


def test_layout_ids_and_bad_options(tmp_path: Path) -> None:
    assert ClusterLayout(spus=3).spu_ids == [5001, 5002, 5003]
    with pytest.raises(InvalidConfigError, match="spu_mode"):
        LocalCluster(tmp_path, spu_mode="cloud")
    with pytest.raises(InvalidConfigError, match="spus"):
        LocalCluster(tmp_path, spus=-1)
    (tmp_path / "cluster.json").write_text("{not json")
    with pytest.raises(InvalidConfigError, match="cluster.json"):
        LocalCluster(tmp_path)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"spus": 1}, "--spus 1: the cluster has 3 SPUs"),
        ({"sc_port": 9100}, "--sc-port 9100: the cluster's SC keeps port 9003"),
        ({"spu_mode": "group"}, "--spu-mode group: the cluster's SPUs are custom SPUs"),
        ({"redis_url": "redis://127.0.0.1:6379/0"}, "keeps its state in its own Redis"),
        ({"spus": 3, "sc_port": 9003, "spu_mode": "custom"}, None),
        ({"spus": 5, "sc_port": 0}, None),  # more SPUs; port 0 is "any port"
        ({"tls": "mtls"}, "TLS mtls: the cluster was made with TLS off"),
        ({"tls": "off"}, None),
        ({}, None),
    ],
)
def test_a_later_start_refuses_options_it_cannot_honour(
    tmp_path: Path, options: dict[str, Any], problem: str | None
) -> None:
    layout = ClusterLayout(
        redis_port=6400,
        redis_url="redis://127.0.0.1:6400/0",
        sc_public_port=9003,
        spu_mode="custom",
        spus=3,
    )
    found = option_conflicts(layout, **options)
    assert found == [] if problem is None else problem in " ".join(found)
    if problem is not None:  # and a start refuses before starting anything
        (tmp_path / "cluster.json").write_text(json.dumps(asdict(layout)))
        with pytest.raises(InvalidConfigError, match=re.escape(problem)):
            LocalCluster(tmp_path, **options).start()
        assert not (tmp_path / "pids").exists()


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
        with pytest.raises(ServerStartError, match="SC failed to start: it exited"):
            cluster.start()
    finally:
        cluster.stop()
    assert time.monotonic() - started < 10
    assert not (tmp_path / "profile.json").exists()


def processes_of(data_dir: Path) -> list[int]:
    """Pids of the processes whose command line names ``data_dir`` (ours, not zombies)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "environ"]):
        info = proc.info
        if info["status"] == psutil.STATUS_ZOMBIE or proc.pid == os.getpid():
            continue
        text = " ".join(info["cmdline"] or []) + " ".join((info["environ"] or {}).values())
        if str(data_dir) in text:
            found.append(proc.pid)
    return found


@pytest.mark.integration
def test_taken_sc_port_stops_the_redis_this_start_started(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        cluster = LocalCluster(tmp_path, sc_port=port, profile=tmp_path / "profile.json")
        try:
            with pytest.raises(
                ServerStartError, match=f"SC failed to start: port 127.0.0.1:{port} is in use"
            ):
                cluster.start()
            assert processes_of(tmp_path) == []
            assert cluster.status().state == "not started"
        finally:
            cluster.stop()
    assert not (tmp_path / "profile.json").exists()


@pytest.mark.integration
def test_an_unreachable_redis_url_is_named_and_nothing_keeps_running(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}"
    cluster = LocalCluster(tmp_path, sc_port=0, redis_url=url, profile=tmp_path / "p.json")
    try:
        with pytest.raises(
            ServerStartError, match=f"Redis at {url} is unreachable: connection refused"
        ):
            cluster.start()
        assert processes_of(tmp_path) == []
        status = cluster.status()
        assert not status.running and status.state != "running"
    finally:
        cluster.stop()


@pytest.mark.integration
def test_a_failed_start_keeps_what_was_already_running(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, spus=0, sc_port=0, profile=tmp_path / "profile.json")
    try:
        cluster.start()
        redis_pid = process_alive(cluster.pid_file("redis"))
        sc_record = running(cluster.pid_file("sc"))
        assert redis_pid is not None and sc_record is not None
        terminate(sc_record, 10.0, name="sc")
        with socket.socket() as sock:  # the SC's port, taken while it was down
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", cluster.layout.sc_public_port))
            sock.listen()
            with pytest.raises(ServerStartError, match="SC failed to start: port"):
                LocalCluster(tmp_path, profile=tmp_path / "profile.json").start()
        assert process_alive(cluster.pid_file("redis")) == redis_pid  # not ours to stop
    finally:
        cluster.stop()
    assert processes_of(tmp_path) == []


def test_status_of_a_data_dir_never_started(tmp_path: Path) -> None:
    status = LocalCluster(tmp_path / "nothing").status()
    assert (status.state, status.running, status.endpoint) == ("not started", False, None)
    assert status.processes == [] and status.spus == []
    assert status.to_dict()["endpoint"] is None
    assert not (tmp_path / "nothing").exists()


@pytest.mark.integration
def test_status_lists_only_the_spus_that_exist(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "c", sc_port=0, profile=tmp_path / "profile.json")
    try:
        cluster.start()
        with Fluvio.connect(cluster.endpoint) as fluvio:
            admin = fluvio.admin()
            admin.create_spu_group("extra", {"replicas": 1, "minId": 6001})
            wait_until(lambda: cluster.spu_pid(6001), 60, "SPU 6001 to run")
            assert "spu-6001" in {p.name for p in cluster.status().processes}
            admin.delete_spu_group("extra")
            wait_until(lambda: 6001 not in {s.spu_id for s in admin.list_spus()}, 60, "no 6001")
            wait_until(lambda: cluster.spu_pid(6001) is None, 60, "SPU 6001 to stop")
        status = cluster.status()
        assert status.state == "running"
        assert {p.name for p in status.processes} == {"redis", "sc", "spu-5001"}
        assert [s["id"] for s in status.spus] == [5001]
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
        # Each SPU its own secret, the Redis a password: all in 0600 files, and the
        # cluster's Redis refuses a client without it.
        secrets = [cluster.spu_dir(i) / SECRET_FILE for i in (5001, 5002)]
        password = tmp_path / "c" / "redis.password"
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in [*secrets, password])
        assert len({read_secret_file(p) for p in secrets}) == 2
        assert "authenticated" in (redis_problem(cluster.layout.redis_url) or "")
        assert redis_problem(cluster.layout.redis_url, password=read_secret_file(password)) is None
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


@pytest.mark.integration
def test_a_start_whose_spu_does_not_come_up_fails(tmp_path: Path) -> None:
    """The SC just started lists the SPU as its store last knew it (online); the start
    must still fail, naming the SPU, when no SPU process runs."""
    cluster = LocalCluster(
        tmp_path, spus=1, sc_port=0, spu_mode="custom", profile=tmp_path / "profile.json"
    )
    try:
        cluster.start()
        for record in (running(cluster.pid_file("sc")), running(cluster.pid_file("spu-5001"))):
            assert record is not None
            os.kill(record.pid, 9)  # both die at once: the store still says Online
        wait_until(lambda: cluster.spu_pid(5001) is None, 10, "the SPU to die")
        wait_until(lambda: running(cluster.pid_file("sc")) is None, 10, "the SC to die")
        broken = LocalCluster(
            tmp_path,
            env={"FLUVIO_SPU_REPLICA_MAX_LAG_MS": "zero"},  # the SPU exits at start
            start_timeout=8,
            profile=tmp_path / "profile.json",
        )
        with pytest.raises(ServerStartError, match=r"SPUs \[5001\] failed to start") as error:
            broken.start()
        assert "SPU 5001: no process running" in str(error.value)
    finally:
        cluster.stop()
    assert processes_of(tmp_path) == []
