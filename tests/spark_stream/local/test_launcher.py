"""``spark_stream.local.launcher``: pid files name one process only."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from spark_stream.local.launcher import process_alive


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
