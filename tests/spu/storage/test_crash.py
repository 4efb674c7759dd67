"""A writer process killed with SIGKILL mid-append loses nothing it acknowledged."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spu.storage import LogConfig, ReplicaLog

from .helpers import read_values

CONFIG = dict(segment_max_bytes=16 * 1024, index_interval_bytes=1024, flush_interval_ms=None)

WRITER = textwrap.dedent(
    """
    import sys
    from spark_stream.records import encode_records
    from spu.storage import ReplicaLog, LogConfig

    directory, first_tag = sys.argv[1], int(sys.argv[2])
    log = ReplicaLog.open(directory, LogConfig(**{config!r}))
    print("open", log.leo, flush=True)
    tag = first_tag
    while True:
        n = 1 + tag % 13
        values = [f"t{{tag}}-r{{i}}".encode() * (1 + i % 4) for i in range(n)]
        (base,) = log.append_produced(encode_records(values))
        log.flush()
        print("ack", tag, base, n, flush=True)
        tag += 1
    """
).format(config=CONFIG)


def expected_values(tag: int, n: int) -> list[bytes]:
    return [f"t{tag}-r{i}".encode() * (1 + i % 4) for i in range(n)]


def parse_acks(lines: list[bytes]) -> list[tuple[int, int, int]]:
    acks = []
    for line in lines:
        fields = line.split()
        if len(fields) == 4 and fields[0] == b"ack":
            acks.append((int(fields[1]), int(fields[2]), int(fields[3])))
    return acks


def run_and_kill(directory: Path, first_tag: int, acks_wanted: int) -> list[tuple[int, int, int]]:
    """Start the writer, SIGKILL it after ``acks_wanted`` acks; return every ack it printed."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(directory), str(first_tag)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    acks: list[tuple[int, int, int]] = []
    pending = b""
    try:
        deadline = time.monotonic() + 60
        while len(acks) < acks_wanted:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "the writer did not acknowledge in time"
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            assert chunk, f"the writer exited with {proc.wait(timeout=30)}"
            *lines, pending = (pending + chunk).split(b"\n")
            acks += parse_acks(lines)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        # Acks printed before the kill landed are acknowledged too; a torn last line is not.
        while chunk := os.read(fd, 1 << 16):
            pending += chunk
        acks += parse_acks(pending.split(b"\n")[:-1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    return acks


@pytest.mark.integration
def test_every_acknowledged_batch_survives_sigkill(tmp_path: Path) -> None:
    directory = tmp_path / "replica"
    acknowledged: list[tuple[int, int, int]] = []
    for round_ in range(3):
        first_tag = acknowledged[-1][0] + 1 if acknowledged else 0
        acks = run_and_kill(directory, first_tag, acks_wanted=150 + 37 * round_)
        assert acks and acks[0][0] == first_tag
        acknowledged += acks

        with ReplicaLog.open(directory, LogConfig(**CONFIG)) as log:
            last_tag, last_base, last_n = acknowledged[-1]
            assert log.leo >= last_base + last_n
            stored = read_values(log)  # decodes with crc + Arrow validation
            assert sorted(stored) == list(range(log.leo))
            for tag, base, n in acknowledged:
                got = [stored[o] for o in range(base, base + n)]
                assert got == expected_values(tag, n), f"batch {tag} at offset {base}"
            if log.leo > last_base + last_n:  # an unacknowledged append that landed
                assert log.leo - (last_base + last_n) == 1 + (last_tag + 1) % 13
            assert len(log.segments) > 1
