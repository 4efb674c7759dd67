"""``python -m spu``: options, bad configuration, clean stop on SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_stream.local import free_port
from spark_stream.spu_identity import SECRET_FILE, write_secret_file
from spu.__main__ import parse_args


def test_options_become_settings_overrides() -> None:
    overrides, level = parse_args(
        ["--id", "7", "--sc", "h:1", "--public-port", "0", "--log-level", "debug"]
    )
    assert overrides == {"id": 7, "sc_endpoint": "h:1", "public_port": 0}
    assert level == "debug"


def test_invalid_configuration_exits_with_a_typed_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spu", "--public-port", "70000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "InvalidConfigError" in result.stderr and "public_port" in result.stderr


def test_an_spu_without_a_secret_exits_saying_where_to_put_it(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spu", "--id", "4", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    expected = "SPU 4 has no secret: set FLUVIO_SPU_SECRET or write the secret given at its "
    assert expected in result.stderr and str(tmp_path / SECRET_FILE) in result.stderr


@pytest.mark.integration
def test_runs_without_an_sc_and_stops_on_sigterm(tmp_path: Path) -> None:
    write_secret_file(tmp_path / SECRET_FILE, "s3cret")
    argv = [
        sys.executable,
        "-m",
        "spu",
        "--id",
        "3",
        "--public-port",
        "0",
        "--private-port",
        "0",
        "--sc",
        f"127.0.0.1:{free_port()}",
        "--data-dir",
        str(tmp_path),
    ]
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as proc:
        _ready_then_sigterm(proc)


def _ready_then_sigterm(proc: subprocess.Popen[str]) -> None:
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the ready line (or EOF if it died)
        assert line.startswith("SPU_READY id=3 public=127.0.0.1:")
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert proc.wait(timeout=20) == 0
        assert time.monotonic() - started < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.integration
def test_a_taken_metrics_port_is_an_error_line_naming_it(tmp_path: Path) -> None:
    write_secret_file(tmp_path / SECRET_FILE, "s3cret")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "spu",
                "--public-port",
                "0",
                "--private-port",
                "0",
                "--metrics-port",
                str(port),
                "--data-dir",
                str(tmp_path),
                "--sc",
                f"127.0.0.1:{free_port()}",
            ],  # fmt: skip
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert "ERROR spu spu failed to start: [Errno " in result.stderr, result.stderr
    assert f"metrics port 127.0.0.1:{port}: Address already in use" in result.stderr
