"""The storage demo runs end to end as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.integration
def test_demo_runs_and_passes_its_checks() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "spu.storage.demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "wrote 100,000 records" in out
    assert "LEO 100,000" in out and "repairs: none" in out
    assert "41000" in out and "first record at or after 00:01:13.210: offset 73211" in out
    assert "pyarrow.parquet reads it back equal to the log: True" in out
    assert "FAILED" not in out and out.rstrip().splitlines()[-1].startswith("storage demo passed")
    leftovers = [line for line in out.splitlines() if line.startswith("replica directory:")]
    assert leftovers and not Path(leftovers[0].split(": ", 1)[1]).exists()
