"""``LocalCluster.delete`` removes the cluster's own entries only (no servers needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_stream.client.profile import Profile, load_profiles, save_profile
from spark_stream.errors import NotFoundError
from spark_stream.local.cluster import LocalCluster


def test_delete_keeps_what_is_not_the_clusters(tmp_path: Path) -> None:
    data = tmp_path / "home"
    for name in ("pids", "logs", "redis", "spus/spu-5001"):
        (data / name).mkdir(parents=True)
    (data / "cluster.json").write_text(json.dumps({"spus": 1}))
    (data / "logs" / "sc.log").write_text("log\n")
    (data / "notes.txt").write_text("mine\n")  # not the cluster's
    profiles = data / "profile.json"  # ~/.fluvio holds the profile file too
    save_profile(Profile(endpoint="127.0.0.1:9100", name="remote"), profiles)
    save_profile(Profile(endpoint="127.0.0.1:9003", data_dir=str(data.resolve())), profiles)

    stopped, removed = LocalCluster(data, profile=profiles).delete()

    assert stopped == []  # nothing ran
    assert sorted(p.name for p in removed) == ["cluster.json", "logs", "pids", "redis", "spus"]
    assert sorted(p.name for p in data.iterdir()) == ["notes.txt", "profile.json"]
    left = load_profiles(profiles)
    assert (sorted(left.profiles), left.current) == (["remote"], None)  # local went


def test_delete_of_an_empty_dir_removes_it_and_never_twice(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    (data / "logs").mkdir(parents=True)
    (data / "cluster.json").write_text("{}")
    profiles = tmp_path / "profile.json"
    _, removed = LocalCluster(data, profile=profiles).delete()
    assert data in removed and not data.exists()
    with pytest.raises(NotFoundError, match="nothing to delete"):
        LocalCluster(data, profile=profiles).delete()
