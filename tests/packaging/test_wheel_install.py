"""``pip install spark-stream`` without pyspark: the client, CLI, SC and SPU all work.

Everything runs from the wheel installed into a fresh venv (``wheel_env``), with the
working directory outside the source tree, so what passes here is what a user gets.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from datasource.connector_jar import JAR_NAME, jar_path
from tests.packaging.conftest import WheelEnv, core_requirements

pytestmark = pytest.mark.integration

# Every module of the core packages, imported one by one in the fresh venv: a module that
# imported pyspark (or anything else outside the core requirements) at import time fails.
_IMPORT_ALL = """
import importlib, pkgutil, sys
names = []
for top in ("spark_stream", "sc", "spu"):
    pkg = importlib.import_module(top)
    names.append(top)
    for info in pkgutil.walk_packages(pkg.__path__, top + "."):
        if info.name.endswith("__main__"):
            continue  # runs the server when imported
        importlib.import_module(info.name)
        names.append(info.name)
assert "pyspark" not in sys.modules
print(len(names))
"""


def test_the_core_requirements_name_no_spark(wheel_env: WheelEnv) -> None:
    names = {
        r.split("<")[0].split(">")[0].split("=")[0] for r in core_requirements(wheel_env.wheel)
    }
    assert not names & {"pyspark", "delta-spark", "pandas"}, names


def test_the_wheel_carries_the_connector_jar_when_it_is_built(wheel_env: WheelEnv) -> None:
    """``./dev setup`` (and so CI) builds the jar before anything packages the project."""
    built = jar_path()
    with zipfile.ZipFile(wheel_env.wheel) as zf:
        names = set(zf.namelist())
    packaged = f"datasource/jars/{JAR_NAME}"
    if built is None:
        assert packaged not in names
    else:
        assert packaged in names
        assert zf_bytes(wheel_env.wheel, packaged) == built.read_bytes()


def zf_bytes(wheel: Path, name: str) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(name)


def test_pyspark_is_absent_and_every_core_module_imports(
    wheel_env: WheelEnv, tmp_path: Path
) -> None:
    env = wheel_env.environ(tmp_path)
    missing = wheel_env.run(["python", "-c", "import pyspark"], cwd=tmp_path, env=env, check=False)
    assert missing.returncode == 1 and "No module named 'pyspark'" in missing.stderr
    spark_side = wheel_env.run(
        ["python", "-c", "import datasource"], cwd=tmp_path, env=env, check=False
    )
    assert "pip install 'spark-stream[spark]'" in spark_side.stderr, spark_side.stderr
    imported = wheel_env.run(["python", "-c", _IMPORT_ALL], cwd=tmp_path, env=env)
    assert int(imported.stdout) > 100  # the walk really went through the packages
    # pip's own check: every installed distribution's requirements are met.
    check = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(wheel_env.python), "check"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert "No broken requirements found" in check.stdout, check.stdout + check.stderr


def test_the_servers_find_their_packaged_defaults(wheel_env: WheelEnv, tmp_path: Path) -> None:
    code = (
        "from spark_stream.config import load_settings, settings_files\n"
        "from sc.settings import ScSettings\nfrom spu.settings import SpuSettings\n"
        "import json\n"
        "print(json.dumps({c.__name__: [settings_files(c), load_settings(c).public_port]"
        " for c in (ScSettings, SpuSettings)}))\n"
    )
    out = json.loads(
        wheel_env.run(["python", "-c", code], cwd=tmp_path, env=wheel_env.environ(tmp_path)).stdout
    )
    for name, yaml_name, port in (
        ("ScSettings", "sc.yaml", 9003),
        ("SpuSettings", "spu.yaml", 9005),
    ):
        (packaged,), public_port = out[name]
        assert Path(packaged).is_relative_to(wheel_env.root), packaged  # in the install
        assert packaged.endswith(f"site-packages/spark_stream/conf/{yaml_name}")
        assert public_port == port


def test_cli_and_a_local_cluster_from_the_wheel(wheel_env: WheelEnv, tmp_path: Path) -> None:
    env = wheel_env.environ(tmp_path)

    def fluvio(*args: str, stdin: str | None = None) -> str:
        return wheel_env.run(["fluvio", *args], cwd=tmp_path, env=env, stdin=stdin).stdout

    usage = fluvio("--help")
    assert "cluster" in usage and "produce" in usage and "consume" in usage
    data = tmp_path / "cluster"
    try:
        started = fluvio(
            "cluster", "start", "--data-dir", str(data), "--spus", "1", "--sc-port", "0"
        )
        assert "cluster running" in started
        fluvio("topic", "create", "wheel-topic")
        fluvio("produce", "wheel-topic", "--acks", "all", stdin="one\ntwo\nthree\n")
        assert fluvio("consume", "wheel-topic", "-B", "-d").splitlines() == ["one", "two", "three"]
        # The cluster's processes ran from the venv: the SC logged the wheel's defaults.
        sc_log = (data / "logs" / "sc.log").read_text()
        assert f"settings files: {wheel_env.root}" in sc_log, sc_log[-2000:]
    finally:
        stop = ["fluvio", "cluster", "stop", "--data-dir", str(data)]
        wheel_env.run(stop, cwd=tmp_path, env=env, check=False)
