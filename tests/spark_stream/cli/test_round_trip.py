"""The ``fluvio`` CLI end to end, as subprocesses: start, topic, produce, consume, stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_stream.local.cluster import LocalCluster
from tests.polling import wait_until

pytestmark = pytest.mark.integration


def fluvio(
    env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "spark_stream.cli", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"fluvio {' '.join(args)} -> {proc.returncode}: {proc.stderr}")
    return proc


def test_cli_round_trip(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    env = {**os.environ, "FLUVIO_PROFILE": str(tmp_path / "profile.json")}
    try:
        start = fluvio(
            env, "cluster", "start", "--data-dir", str(data), "--spus", "2", "--sc-port", "0"
        )
        assert "cluster running" in start.stdout
        first = json.loads(fluvio(env, "cluster", "status", "-O", "json").stdout)
        again = fluvio(env, "cluster", "start", "--data-dir", str(data), "-O", "json")
        second = json.loads(again.stdout)  # start is idempotent: the same processes
        pids = {p["name"]: p["pid"] for p in first["processes"]}
        assert pids == {p["name"]: p["pid"] for p in second["processes"]}
        assert set(pids) == {"redis", "sc", "spu-5001", "spu-5002"}

        created = fluvio(env, "topic", "create", "greetings", "-p", "2", "-r", "2")
        assert "created" in created.stdout
        topics = json.loads(fluvio(env, "topic", "list", "-O", "json").stdout)
        assert [(t["name"], t["partitions"], t["replication"]) for t in topics] == [
            ("greetings", 2, 2)
        ]

        lines = "".join(f"k{i}:hello {i}\n" for i in range(20))
        fluvio(env, "produce", "greetings", "--key-separator", ":", "--acks", "all", stdin=lines)
        source = tmp_path / "more.txt"
        source.write_text("".join(f"f{i}:file {i}\n" for i in range(30)))
        sent = fluvio(
            env, "produce", "greetings", "--key-separator", ":", "-f", str(source), "--acks",
            "all", "-v",
        )  # fmt: skip
        landed = sent.stderr.splitlines()  # -v with a file: where each batch landed
        assert landed and all(line.startswith("partition=") for line in landed), sent.stderr

        out = fluvio(env, "consume", "greetings", "-B", "-d", "-k").stdout.splitlines()
        expected = {f"[k{i}] hello {i}" for i in range(20)}
        expected |= {f"[f{i}] file {i}" for i in range(30)}
        assert len(out) == 50 and set(out) == expected
        one = fluvio(env, "consume", "greetings", "-p", "0", "-B", "-d", "-O", "json").stdout
        records = [json.loads(line) for line in one.splitlines()]
        assert [r["offset"] for r in records] == list(range(len(records)))

        def partitions() -> list[dict[str, object]]:
            return json.loads(fluvio(env, "partition", "list", "-O", "json").stdout)

        # Leaders report LEO/HW to the SC periodically: poll with a deadline.
        wait_until(
            lambda: sum(int(p["hw"]) for p in partitions()) == 50,
            30,  # type: ignore[call-overload]
            "partition list to show every record",
        )
        parts = partitions()
        assert {p["leader"] for p in parts} <= {5001, 5002}

        # Topic settings reach the SPU's log: 2 KiB segments roll at 2 KiB (one file of
        # about 3 KiB is one batch, so each gets a segment of its own).
        small = fluvio(env, "topic", "create", "small", "--segment-size", "2Ki", check=False)
        assert small.returncode == 0, small.stderr
        files = []
        for n in range(3):
            path = tmp_path / f"small-{n}.txt"
            path.write_text("".join(f"{n}-{i}:{'x' * 90}\n" for i in range(30)))
            files += ["-f", str(path)]
        fluvio(env, "produce", "small", "--key-separator", ":", *files, "--acks", "all")
        segments = sorted(data.glob("spus/spu-*/small-0/*.log"))
        assert len(segments) == 3, segments
        tiny = fluvio(env, "topic", "create", "tiny", "--segment-size", "512", check=False)
        assert tiny.returncode == 1 and "segment_size: 512 bytes is outside" in tiny.stderr

        status = fluvio(env, "cluster", "status", "-O", "json")
        doc = json.loads(status.stdout)
        assert doc["running"] and {s["status"] for s in doc["spus"]} == {"Online"}

        # A custom SPU is registered with its own secret: made into a 0600 file, or
        # printed once; the SC keeps only its verifier.
        secret_file = tmp_path / "spu-6001.secret"
        registered = fluvio(
            env, "cluster", "spu", "register", "--id", "6001", "-p", "127.0.0.1:9",
            "-v", "127.0.0.1:10", "--secret-file", str(secret_file),
        )  # fmt: skip
        assert f"its secret is in {secret_file}" in registered.stdout
        assert secret_file.stat().st_mode & 0o777 == 0o600
        printed = fluvio(env, "cluster", "spu", "register", "--id", "6002").stdout
        assert "secret (shown once; give it to the SPU as FLUVIO_SPU_SECRET): " in printed
        listed = fluvio(env, "cluster", "spu", "list", "-O", "json").stdout
        assert secret_file.read_text().strip() not in listed and "sha256" not in listed
        for spu_id in ("6001", "6002"):
            fluvio(env, "cluster", "spu", "unregister", "--id", spu_id)

        missing = fluvio(env, "topic", "describe", "nope", check=False)
        assert missing.returncode == 1 and missing.stderr.startswith("error:")
        assert "Traceback" not in missing.stderr

        stop = fluvio(env, "cluster", "stop", "--data-dir", str(data))
        assert "sc" in stop.stdout and "redis" in stop.stdout
        stopped = fluvio(env, "cluster", "status", "--data-dir", str(data), check=False)
        assert stopped.returncode == 1 and "stopped" in stopped.stdout
        assert (data / "redis").is_dir() and (data / "spus" / "spu-5001").is_dir()

        fluvio(env, "cluster", "start", "--data-dir", str(data))  # data survived the stop
        kept = fluvio(env, "consume", "greetings", "-B", "-d").stdout.splitlines()
        assert len(kept) == 50
    finally:
        LocalCluster(data).stop()
