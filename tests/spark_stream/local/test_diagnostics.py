"""``collect_diagnostics`` of a cluster that is down: what it has, and what it could not get.

(A running cluster's archive, with the SC's state and Redis ``INFO``, is checked in
``tests/spark_stream/cli/test_fluvio_parity.py``.)
"""

from __future__ import annotations

import json
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from spark_stream.client.profile import Profile, save_profile
from spark_stream.errors import NotFoundError
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.diagnostics import collect_diagnostics
from spark_stream.local.redis_server import free_port


def test_a_stopped_cluster_still_gives_its_logs_and_says_what_is_missing(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    (data / "logs").mkdir(parents=True)
    (data / "spus" / "spu-5001").mkdir(parents=True)
    dead_redis = f"redis://127.0.0.1:{free_port()}/0"
    (data / "cluster.json").write_text(json.dumps({"redis_url": dead_redis, "spus": 1}))
    (data / "logs" / "sc.log").write_text("2026-01-01 00:00:00 ERROR sc boom\n")
    (data / "spus" / "spu-5001" / "spu.log").write_text("spu line\n")
    (data / "spus" / "spu-5001" / "00000000000000000000.log").write_bytes(b"records")
    cluster = LocalCluster(data, profile=tmp_path / "profile.json")

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    path = collect_diagnostics(cluster, tmp_path / "out", timeout=1.0, now=when)

    assert path == tmp_path / "out" / "diagnostics-20260102T030405Z.tar.gz"
    with tarfile.open(path) as tar:
        files = {
            name.split("/", 1)[1]: tar.extractfile(name).read()  # type: ignore[union-attr]
            for name in tar.getnames()
        }
    assert sorted(files) == [
        "config/cluster.json",
        "errors.txt",
        "logs/sc.log",
        "logs/spu-5001.log",
        "state/status.json",
    ]  # no record data, no SC state
    assert files["logs/sc.log"].startswith(b"2026-01-01")
    assert json.loads(files["state/status.json"])["state"] == "stopped"
    errors = files["errors.txt"].decode()
    assert "SC: not running (cluster stopped)" in errors and f"Redis at {dead_redis}" in errors


def test_the_archived_profile_has_its_tokens_redacted(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    (data / "logs").mkdir(parents=True)
    (data / "cluster.json").write_text(json.dumps({"spus": 0}))
    profile = tmp_path / "profile.json"
    save_profile(Profile(endpoint="127.0.0.1:1", token="fv1.secret.mac"), profile)
    path = collect_diagnostics(LocalCluster(data, profile=profile), tmp_path / "out", timeout=1.0)
    with tarfile.open(path) as tar:
        [name] = [n for n in tar.getnames() if n.endswith("config/profile.json")]
        archived = tar.extractfile(name).read().decode()  # type: ignore[union-attr]
    assert "fv1.secret.mac" not in archived
    assert json.loads(archived)["profiles"]["local"]["token"] == "<redacted>"


def test_nothing_to_diagnose(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="nothing to diagnose"):
        collect_diagnostics(LocalCluster(tmp_path / "never"), tmp_path)
