"""A writer process killed with SIGKILL mid-append loses nothing it acknowledged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spu.storage import ReplicaLog, StorageConfig

from .helpers import read_values

CONFIG = dict(segment_max_bytes=16 * 1024, index_interval_bytes=1024, flush_interval_ms=None)

WRITER = textwrap.dedent(
    """
    import sys
    from spark_stream.records import encode_records
    from spu.storage import ReplicaLog, StorageConfig

    directory, first_tag = sys.argv[1], int(sys.argv[2])
    log = ReplicaLog.open(directory, StorageConfig(**{config!r}))
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


def run_and_kill(directory: Path, first_tag: int, acks_wanted: int) -> list[tuple[int, int, int]]:
    """Start the writer, SIGKILL it after ``acks_wanted`` acks; return every ack it printed."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(directory), str(first_tag)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )
    acks: list[tuple[int, int, int]] = []
    try:
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while len(acks) < acks_wanted:
            assert time.monotonic() < deadline, "the writer did not acknowledge in time"
            line = proc.stdout.readline()
            assert line, f"the writer exited: {proc.stderr.read() if proc.stderr else ''}"
            if line.startswith("ack"):
                _, tag, base, n = line.split()
                acks.append((int(tag), int(base), int(n)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        rest = proc.stdout.read()          # acks printed before the kill landed
        for line in rest.splitlines():
            if line.startswith("ack") and len(line.split()) == 4:
                _, tag, base, n = line.split()
                acks.append((int(tag), int(base), int(n)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
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

        with ReplicaLog.open(directory, StorageConfig(**CONFIG)) as log:
            last_tag, last_base, last_n = acknowledged[-1]
            assert log.leo >= last_base + last_n
            stored = read_values(log)            # decodes with crc + Arrow validation
            assert sorted(stored) == list(range(log.leo))
            for tag, base, n in acknowledged:
                got = [stored[o] for o in range(base, base + n)]
                assert got == expected_values(tag, n), f"batch {tag} at offset {base}"
            if log.leo > last_base + last_n:     # an unacknowledged append that landed
                assert log.leo - (last_base + last_n) == 1 + (last_tag + 1) % 13
            assert len(log.segments) > 1
