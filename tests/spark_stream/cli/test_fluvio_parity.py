"""Fluvio's CLI flags and commands against a real local cluster, as subprocesses.

``consume -H/--end/-b/--format``, ``produce --linger/--isolation/--delivery-semantic/
--max-request-size``, ``partition list`` SIZE/LOG-START/LAG, ``profile``, ``--version``,
``cluster diagnostics`` and ``cluster delete``.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import pytest

from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until
from tests.spark_stream.cli.test_round_trip import fluvio

pytestmark = pytest.mark.integration


def test_fluvio_parity(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    env = {**os.environ, "FLUVIO_PROFILE": str(tmp_path / "profile.json")}
    env.pop("FLUVIO_ENDPOINT", None)
    try:
        version = fluvio(env, "--version").stdout
        assert version.startswith("fluvio (spark-stream) ")
        fluvio(env, "cluster", "start", "--data-dir", str(data), "--sc-port", "0")
        assert fluvio(env, "profile", "current").stdout == "local\n"
        fluvio(env, "topic", "create", "t", "-p", "2")
        for partition in (0, 1):
            lines = "".join(f"k{i}:v{i}\n" for i in range(10))
            fluvio(
                env, "produce", "t", "-p", str(partition), "--key-separator", ":",
                "--linger", "150ms", "--batch-size", "16Ki", "--max-request-size", "1Mi",
                "--isolation", "read_committed", "--delivery-semantic", "at-least-once",
                stdin=lines,
            )  # fmt: skip

        # -H 3: from three records after the start; --format with Fluvio's placeholders
        head = fluvio(
            env, "consume", "t", "-p", "0", "-H", "3", "-d", "--format",
            "{{key}}={{value}}@{{partition}}/{{offset}} {{time}}",
        ).stdout.splitlines()  # fmt: skip
        assert [line.split(" ")[0] for line in head] == [f"k{i}=v{i}@0/{i}" for i in range(3, 10)]
        assert all(line.endswith("Z") and "T" in line.split(" ")[1] for line in head)
        # --end over every partition, without -d: each stops after offset 4, then exit
        ended = fluvio(
            env, "consume", "t", "-H", "2", "--end", "4", "-F", "{{partition}}:{{offset}}"
        )
        assert sorted(ended.stdout.split()) == sorted(f"{p}:{o}" for p in (0, 1) for o in (2, 3, 4))
        # -b: a tiny fetch size still returns at least one batch per fetch
        small = fluvio(env, "consume", "t", "-p", "1", "-B", "-d", "-b", "1").stdout
        assert small.split() == [f"v{i}" for i in range(10)]
        crossed = fluvio(env, "consume", "t", "-p", "0", "--start", "5", "--end", "2", check=False)
        assert crossed.returncode == 1
        assert (
            crossed.stderr == "error: consume: --end 2 is before --start 5 (--end is inclusive)\n"
        )
        bad = fluvio(env, "produce", "t", "--linger", "soon", stdin="x\n", check=False)
        assert bad.returncode == 2 and "argument --linger: 'soon' is not a duration" in bad.stderr
        fluvio(env, "produce", "t", "-p", "1", "--delivery-semantic", "at-most-once", stdin="w\n")

        # LAG: a group that committed 4 of 10 records of "one"
        fluvio(env, "topic", "create", "one")
        fluvio(env, "produce", "one", stdin="".join(f"r{i}\n" for i in range(10)))
        fluvio(env, "consume", "one", "-g", "g1", "-B", "-d", "-n", "4")

        def rows() -> dict[tuple[str, int], dict[str, object]]:
            listed = json.loads(fluvio(env, "partition", "list", "-O", "json").stdout)
            return {(r["topic"], r["partition"]): r for r in listed}

        wait_until(  # leaders report their status to the SC periodically
            lambda: all(isinstance(r["size"], int) and r["size"] > 0 for r in rows().values()),
            30,  # type: ignore[call-overload]
            "every partition's size in partition list",
        )
        listed = rows()
        assert listed[("one", 0)]["lag"] == 6 and listed[("one", 0)]["log-start"] == 0
        assert listed[("t", 0)]["lag"] is None  # no group reads it
        table = fluvio(env, "partition", "list", "one").stdout.splitlines()
        header = table[0].split()
        assert header[-1] == "LAG" and {"SIZE", "LOG-START", "LEO", "HW", "LRS"} <= set(header)
        assert table[1].split()[-1] == "6"

        diag = fluvio(env, "cluster", "diagnostics", "--dest", str(tmp_path / "diag"))
        archive = Path(diag.stdout.strip())
        assert archive.parent == tmp_path / "diag" and archive.name.endswith(".tar.gz")
        with tarfile.open(archive) as tar:
            names = {n.split("/", 1)[1] for n in tar.getnames()}
            top = tar.getnames()[0].split("/")[0]
            topics = json.load(tar.extractfile(f"{top}/state/topics.json"))  # type: ignore[arg-type]
            info = json.load(tar.extractfile(f"{top}/state/redis-info.json"))  # type: ignore[arg-type]
        assert {"logs/sc.log", "logs/redis.log", "config/cluster.json"} <= names
        assert {"state/status.json", "state/partitions.json", "state/spus.json"} <= names
        assert "state/consumer-groups.json" in names and "errors.txt" not in names
        assert sorted(t["metadata"]["name"] for t in topics) == ["one", "t"]
        assert "redis_version" in info

        refused = fluvio(env, "cluster", "delete", "--data-dir", str(data), stdin="", check=False)
        assert refused.returncode == 1 and "add --force (-y)" in refused.stderr
        assert (data / "cluster.json").is_file()  # nothing was touched
        deleted = fluvio(env, "cluster", "delete", "--data-dir", str(data), "-y")
        assert f"deleted the cluster in {data}" in deleted.stdout and "sc" in deleted.stdout
        assert not data.exists()
        gone = fluvio(env, "cluster", "status", "--data-dir", str(data), check=False)
        assert gone.returncode == 1 and "cluster not started" in gone.stdout
        assert "no profiles" in fluvio(env, "profile", "list").stdout
        again = fluvio(env, "cluster", "delete", "--data-dir", str(data), "-y", check=False)
        assert again.returncode == 1 and "nothing to delete" in again.stderr
    finally:
        LocalCluster(data).stop()
