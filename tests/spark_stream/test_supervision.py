"""Supervision by pid with real short-lived processes: pid files, liveness, stop, log tails."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from spark_stream.config import load_settings
from spark_stream.supervision import (
    POLL_BACKOFF,
    ManagedSpuDirs,
    PidRecord,
    log_tail,
    log_text,
    read_pid_file,
    reap,
    running,
    send_signal,
    spawn,
    spu_environment,
    terminate,
    terminate_async,
    write_pid_file,
)
from spu.settings import SpuSettings
from tests.polling import wait_until

Spawn = Callable[..., PidRecord]

IGNORE_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Spawn]:
    """``spawn`` into ``tmp_path/child.log``; whatever still runs is killed at the end."""
    made: list[PidRecord] = []

    def run(
        argv: Sequence[str], *, env: dict[str, str] | None = None, new_session: bool = True
    ) -> PidRecord:
        record = spawn(argv, tmp_path / "child.log", env=env, new_session=new_session)
        made.append(record)
        return record

    try:
        yield run
    finally:
        for record in made:
            terminate(record, 5.0, sig=signal.SIGKILL)


def _zombie(record: PidRecord) -> bool:
    try:
        return psutil.Process(record.pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# -- pid files ---------------------------------------------------------------------------


def test_pid_file_round_trip_keeps_the_exact_start_time(tmp_path: Path) -> None:
    record = PidRecord(1234, 1712345678.123456)
    path = tmp_path / "sub" / "x.pid"
    write_pid_file(path, record)
    assert path.read_text() == "1234 1712345678.123456\n"
    assert read_pid_file(path) == record
    assert [p.name for p in path.parent.iterdir()] == ["x.pid"]  # no temp file left


@pytest.mark.parametrize(
    "text",
    ["", "garbage", "12", "12 1.0 3", "x 1.0", "12 y", "0 1.0", "-1 1.0", "\x00\xff"],
)
def test_garbage_pid_files_read_as_none(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.pid"
    path.write_text(text, errors="surrogateescape")
    assert read_pid_file(path) is None
    assert running(path) is None


def test_missing_and_undecodable_pid_files_read_as_none(tmp_path: Path) -> None:
    assert read_pid_file(tmp_path / "missing.pid") is None
    (tmp_path / "bin.pid").write_bytes(b"\xff\xfe 1.0")
    assert read_pid_file(tmp_path / "bin.pid") is None


def test_a_pid_names_one_process_only() -> None:
    with pytest.raises(ValueError, match="positive"):
        PidRecord(0, 1.0)


# -- liveness ----------------------------------------------------------------------------


def test_liveness_needs_the_same_pid_and_start_time(tmp_path: Path, start: Spawn) -> None:
    child = start(["sleep", "30"])
    assert child.create_time == psutil.Process(child.pid).create_time()
    assert child.alive()
    path = tmp_path / "child.pid"
    write_pid_file(path, child)
    assert running(path) == child
    recycled = PidRecord(child.pid, child.create_time - 100)  # same pid, another process
    assert not recycled.alive()
    write_pid_file(path, recycled)
    assert running(path) is None
    assert not send_signal(recycled, signal.SIGKILL)  # never signalled
    time.sleep(0.05)
    assert child.alive()


def test_an_exited_child_is_a_zombie_until_reaped(tmp_path: Path, start: Spawn) -> None:
    child = start([sys.executable, "-c", "raise SystemExit(3)"])
    wait_until(lambda: _zombie(child), 10, "the child to exit")
    assert not child.alive()  # a zombie does not count
    path = tmp_path / "child.pid"
    write_pid_file(path, child)
    assert running(path) is None  # ... and reading its pid file reaped it
    assert not _zombie(child)
    assert reap(child.pid) is None  # nothing left to collect


_MAIN_THREAD_ENDS_FIRST = """
import ctypes, os, threading, time
threading.Thread(target=lambda: (time.sleep(1.0), os._exit(4))).start()
ctypes.CDLL(None).pthread_exit(None)  # the main thread ends; the other one still runs
"""


def test_reap_waits_for_a_child_whose_main_thread_ended_first(start: Spawn) -> None:
    """A zombie main thread with a live thread is not collectable yet (CI saw an SC in
    that state: ``alive()`` false, exit code None); ``wait_s`` waits for the rest."""
    child = start([sys.executable, "-c", _MAIN_THREAD_ENDS_FIRST])
    wait_until(lambda: _zombie(child), 10, "the main thread to end")
    assert not child.alive()
    assert reap(child.pid) is None  # the other thread still runs: nothing to collect
    assert reap(child.pid, wait_s=30) == 4


def test_reap_returns_the_exit_code_of_our_child_only(start: Spawn) -> None:
    child = start([sys.executable, "-c", "raise SystemExit(7)"])
    wait_until(lambda: _zombie(child), 10, "the child to exit")
    assert reap(child.pid) == 7
    assert reap(child.pid) is None
    assert reap(1) is None  # init: not our child
    gone = PidRecord.of(child.pid)
    assert gone.create_time == 0.0 or gone.create_time != child.create_time
    assert not gone.alive()


# -- spawn -------------------------------------------------------------------------------


def test_spawn_appends_output_adds_env_and_detaches(tmp_path: Path, start: Spawn) -> None:
    log = tmp_path / "child.log"
    log.write_text("earlier run\n")
    script = "import os, sys; print(os.environ['SUP_X']); print('err', file=sys.stderr)"
    child = start([sys.executable, "-c", script], env={"SUP_X": "hello"})
    wait_until(lambda: _zombie(child), 10, "the child to exit")
    assert terminate(child, 5.0) == 0
    assert log.read_text().splitlines() == ["earlier run", "hello", "err"]

    detached = start(["sleep", "30"])
    assert os.getsid(detached.pid) == detached.pid  # its own session
    attached = start(["sleep", "30"], new_session=False)
    assert os.getsid(attached.pid) == os.getsid(0)
    assert os.getpgid(attached.pid) == os.getpgid(0)


def test_spawn_of_a_missing_command_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        spawn([str(tmp_path / "no-such-command")], tmp_path / "x.log")


# -- stop --------------------------------------------------------------------------------


def test_terminate_stops_with_sigterm_and_reaps(start: Spawn) -> None:
    child = start(["sleep", "30"])
    assert terminate(child, 5.0) == -signal.SIGTERM
    assert not child.alive() and not _zombie(child)
    assert terminate(child, 5.0) is None  # already gone: nothing sent, nothing to reap


def test_a_child_ignoring_sigterm_is_killed_after_the_timeout(tmp_path: Path, start: Spawn) -> None:
    child = start([sys.executable, "-c", IGNORE_TERM])
    wait_until(lambda: "ready" in log_text(tmp_path / "child.log"), 10, "SIGTERM ignored")
    began = time.monotonic()
    assert terminate(child, 0.3, name="stubborn") == -signal.SIGKILL
    assert time.monotonic() - began >= 0.3
    assert not child.alive() and not _zombie(child)


def test_terminate_async_runs_the_same_steps(tmp_path: Path, start: Spawn) -> None:
    polite = start(["sleep", "30"])
    assert asyncio.run(terminate_async(polite, 5.0)) == -signal.SIGTERM
    stubborn = start([sys.executable, "-c", IGNORE_TERM])
    wait_until(lambda: "ready" in log_text(tmp_path / "child.log"), 10, "SIGTERM ignored")
    assert asyncio.run(terminate_async(stubborn, 0.2)) == -signal.SIGKILL
    assert not stubborn.alive() and not _zombie(stubborn)


def test_poll_intervals_grow_to_a_ceiling() -> None:
    assert [POLL_BACKOFF.delay(i) for i in range(7)] == pytest.approx(
        [0.01, 0.02, 0.04, 0.08, 0.16, 0.2, 0.2]
    )


# -- logs and the managed-SPU layout -----------------------------------------------------


def test_log_tail_formats_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    assert log_tail(log) == ""  # missing
    log.write_text("")
    assert log_tail(log) == ""
    log.write_text("".join(f"line {i}\n" for i in range(20)))
    assert log_tail(log, 3) == "\n  line 17\n  line 18\n  line 19"
    assert len(log_tail(log).splitlines()) == 1 + 15  # the default: 15 lines
    offset = len("".join(f"line {i}\n" for i in range(19)))
    assert log_tail(log, 5, offset=offset) == "\n  line 19"
    assert log_text(log, offset) == "line 19\n"


def test_managed_spu_dirs(tmp_path: Path) -> None:
    dirs = ManagedSpuDirs(tmp_path / "spus")
    assert dirs.spu_ids() == []
    assert dirs.pid_file(5001) == tmp_path / "spus" / "spu-5001" / "spu.pid"
    assert dirs.log_file(5001) == tmp_path / "spus" / "spu-5001" / "spu.log"
    for name in ("spu-5002", "spu-12", "spu-x", "5003", "other"):
        (tmp_path / "spus" / name).mkdir(parents=True)
    assert dirs.spu_ids() == [12, 5002]


def test_spu_environment_configures_the_spu_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    env = spu_environment(
        7,
        sc_endpoint="[::1]:9004",
        data_dir=Path("/data/spu-7"),
        ports=(9105, 9106),
        host="::1",
        secret="s3cret",
        settings={"replica_max_lag_ms": 2000, "heartbeat_interval_s": 0.5},
    )
    assert all(key.startswith("FLUVIO_SPU_") for key in env)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings(SpuSettings)
    assert (settings.id, settings.sc_endpoint, settings.data_dir) == (
        7,
        "[::1]:9004",
        "/data/spu-7",
    )
    assert (settings.public_port, settings.private_port, settings.host) == (9105, 9106, "::1")
    assert (settings.load_secret(), settings.replica_max_lag_ms, settings.heartbeat_interval_s) == (
        "s3cret",
        2000,
        0.5,
    )
    bare = spu_environment(1, sc_endpoint="127.0.0.1:9004", data_dir=Path("d"))
    assert "FLUVIO_SPU_HOST" not in bare and "FLUVIO_SPU_SECRET" not in bare
    assert (bare["FLUVIO_SPU_PUBLIC_PORT"], bare["FLUVIO_SPU_PRIVATE_PORT"]) == ("0", "0")
