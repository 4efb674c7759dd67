"""``fluvio consume`` over a frame that rotted on disk: an error naming its offsets, or
with ``--skip-corrupt-frames`` the other records and a warning naming the skipped range."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spu.storage.layout import replica_dir
from tests.spark_stream.cli.test_round_trip import fluvio

pytestmark = pytest.mark.integration


def test_consume_names_a_damaged_frame_and_skips_it_when_asked(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    env = {**os.environ, "FLUVIO_PROFILE": str(tmp_path / "profile.json")}
    try:
        fluvio(env, "cluster", "start", "--data-dir", str(data), "--spus", "1", "--sc-port", "0")
        fluvio(env, "topic", "create", "rot")
        for line in ("first", "rotten", "last"):  # one frame each
            fluvio(env, "produce", "rot", "--acks", "all", stdin=line + "\n")
        log_file = replica_dir(data / "spus" / "spu-5001", "rot", 0) / f"{0:020}.log"
        at = log_file.read_bytes().find(b"rotten")
        with log_file.open("r+b") as f:  # bit rot, in place
            f.seek(at)
            f.write(b"R")

        failed = fluvio(env, "consume", "rot", "-B", "-d", check=False)
        assert failed.returncode != 0
        assert "crc mismatch in the frame of offsets [1, 1]" in failed.stderr
        assert "--skip-corrupt-frames" in failed.stderr or "skip_corrupt_frames" in failed.stderr

        skipped = fluvio(env, "consume", "rot", "-B", "-d", "--skip-corrupt-frames")
        assert skipped.stdout.splitlines() == ["first", "last"]
        assert "skipping the frame of offsets [1, 1]" in skipped.stderr
    finally:
        fluvio(env, "cluster", "stop", "--data-dir", str(data), check=False)
