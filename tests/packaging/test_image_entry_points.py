"""The image's processes without a container runtime: the SC and two SPUs come up.

The SC runs the Dockerfile's CMD and the SPUs the StatefulSet's command (its shell script:
register as a custom SPU, then ``exec fluvio-spu``), each from the wheel in a fresh venv
(``wheel_env``, what the image installs), with the image's ENV and the container's env
from the manifests. What a cluster would give differently is replaced, and only that:
the image's ``/data`` volume by a temporary directory per process, ``0.0.0.0`` and the
fixed ports by loopback and free ports, Redis by the test's (no password, so no password
file), the pod IP by 127.0.0.1, the pod's hostname (``fluvio-spu-N``) by the variable.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from spark_stream.local.redis_server import free_port
from tests.packaging.conftest import WheelEnv
from tests.packaging.deploy_files import (
    ImageRuntime,
    container,
    container_env,
    find,
    image_runtime,
    manifests,
    remap,
)
from tests.polling import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


class Processes:
    """The processes a test started, stopped (SIGTERM, then SIGKILL) at the end."""

    def __init__(self, wheel_env: WheelEnv) -> None:
        self.wheel_env = wheel_env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str], workdir: Path) -> None:
        """Start ``argv`` in ``workdir`` (the image's WORKDIR: its volume)."""
        workdir.mkdir(parents=True, exist_ok=True)
        exe = self.wheel_env.bin / argv[0]
        command = [str(exe) if exe.exists() else argv[0], *argv[1:]]
        self.logs[name] = workdir / f"{name}.out"
        with self.logs[name].open("ab") as out:
            self.procs[name] = subprocess.Popen(
                command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def stop(self, name: str) -> int:
        """SIGTERM ``name`` and wait for it; its exit code."""
        proc = self.procs.pop(name)
        proc.terminate()
        try:
            return proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(timeout=20)

    def log(self, name: str) -> str:
        """What ``name`` wrote so far."""
        return self.logs[name].read_text(errors="replace")

    def stop_all(self) -> None:
        """Stop everything still running, SPUs before the SC."""
        for name in sorted(self.procs, key=lambda n: n == "sc"):
            self.stop(name)


@pytest.fixture
def processes(wheel_env: WheelEnv) -> Iterator[Processes]:
    procs = Processes(wheel_env)
    try:
        yield procs
    finally:
        procs.stop_all()


def _image_env(
    image: ImageRuntime, wheel_env: WheelEnv, volume: Path, home: Path
) -> dict[str, str]:
    (volume_path,) = image.volumes
    env = remap(image.env, volume_path, volume)
    env = remap(env, image.env["FLUVIO_CONF_DIR"], home / "etc-fluvio")  # holds no override
    return wheel_env.environ(home, **env)


def _spus(wheel_env: WheelEnv, env: dict[str, str], cwd: Path) -> dict[int, dict[str, Any]] | None:
    """The SC's SPUs by id, or None while the SC does not answer."""
    argv = ["fluvio", "cluster", "spu", "list", "-O", "json"]
    out = wheel_env.run(argv, cwd=cwd, env=env, check=False)
    if out.returncode != 0:
        return None
    return {row["id"]: row for row in json.loads(out.stdout)}


def test_sc_and_spus_run_from_the_image_commands(
    wheel_env: WheelEnv, redis_url: str, tmp_path: Path, processes: Processes
) -> None:
    image = image_runtime(REPO / "Dockerfile")
    docs = manifests(REPO / "deploy" / "k8s")
    sc_spec = container(find(docs, "Deployment", "fluvio-sc"), "sc")
    spu_spec = container(find(docs, "StatefulSet", "fluvio-spu"), "spu")
    public, private = free_port(), free_port()
    client_env = wheel_env.environ(tmp_path, FLUVIO_ENDPOINT=f"127.0.0.1:{public}")

    sc_env = _image_env(image, wheel_env, tmp_path / "sc" / "data", tmp_path / "sc")
    sc_env.update(container_env(sc_spec, {}))
    del sc_env["FLUVIO_SC_REDIS_PASSWORD_FILE"]  # the test's Redis needs none
    sc_env.update(
        FLUVIO_SC_HOST="127.0.0.1",
        FLUVIO_SC_PUBLIC_PORT=str(public),
        FLUVIO_SC_PRIVATE_PORT=str(private),
        FLUVIO_SC_REDIS_URL=redis_url,
    )
    assert image.argv(sc_spec) == ["fluvio-sc"]  # the Deployment runs the image's CMD
    processes.start("sc", image.argv(sc_spec), sc_env, tmp_path / "sc" / "data")
    wait_until(lambda: _spus(wheel_env, client_env, tmp_path) == {}, 60, "the SC to answer")

    def start_spu(ordinal: int, ports: tuple[int, int]) -> None:
        home = tmp_path / f"fluvio-spu-{ordinal}"
        env = _image_env(image, wheel_env, home / "data", home)
        env.update(container_env(spu_spec, {"FLUVIO_SPU_HOST": "127.0.0.1"}))
        env.update(
            HOSTNAME=f"fluvio-spu-{ordinal}",
            FLUVIO_SPU_PUBLIC_PORT=str(ports[0]),
            FLUVIO_SPU_PRIVATE_PORT=str(ports[1]),
            FLUVIO_SPU_SC_ENDPOINT=f"127.0.0.1:{private}",
            FLUVIO_ENDPOINT=f"127.0.0.1:{public}",
        )
        processes.start(f"spu-{ordinal}", image.argv(spu_spec), env, home / "data")

    ports = {n: (free_port(), free_port()) for n in (0, 1)}
    for ordinal, pair in ports.items():
        start_spu(ordinal, pair)

    def online() -> dict[int, dict[str, Any]] | None:
        spus = _spus(wheel_env, client_env, tmp_path) or {}
        return (
            spus if len(spus) == 2 and all(s["status"] == "Online" for s in spus.values()) else None
        )

    spus = cast(dict[int, dict[str, Any]], wait_until(online, 90, "two SPUs online"))
    assert set(spus) == {5001, 5002}  # FLUVIO_SPU_ID_BASE + the pod's ordinal
    assert spus[5001]["type"] == "Custom"
    assert spus[5002]["public"] == f"127.0.0.1:{ports[1][0]}"
    sc_log = processes.log("sc")
    assert f"settings files: {wheel_env.root}" in sc_log, sc_log[-2000:]

    # A restarted pod registers again: "already registered" is fine, the SPU comes back.
    assert processes.stop("spu-0") == 0
    wait_until(
        lambda: (_spus(wheel_env, client_env, tmp_path) or {})[5001]["status"] != "Online", 60
    )
    start_spu(0, ports[0])
    wait_until(online, 90, "SPU 5001 back online")
    assert "already registered" in processes.log("spu-0")

    def fluvio(*args: str, stdin: str | None = None) -> str:
        return wheel_env.run(["fluvio", *args], cwd=tmp_path, env=client_env, stdin=stdin).stdout

    fluvio("topic", "create", "image-topic", "-r", "2")
    fluvio("produce", "image-topic", "--acks", "all", stdin="a\nb\n")
    assert fluvio("consume", "image-topic", "-B", "-d").splitlines() == ["a", "b"]
    for ordinal in (0, 1):  # each SPU's replica lives on its own volume (FLUVIO_SPU_DATA_DIR)
        spu_data = tmp_path / f"fluvio-spu-{ordinal}" / "data" / "spu"
        assert any(spu_data.rglob("*.log")), spu_data
