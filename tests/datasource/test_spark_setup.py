"""Delta jar fetching (no network needed) and auto-registration through the install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from datasource.session import (
    DELTA_ARTIFACTS,
    check_worker_python,
    delta_conf,
    delta_jars,
    local_session,
)
from spark_stream.errors import InvalidConfigError, JarFetchError
from spark_stream.local.cluster import LocalCluster

JAR_NAMES = [f"{artifact}-{version}.jar" for _, artifact, version in DELTA_ARTIFACTS]


def test_cached_jars_are_used_without_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in JAR_NAMES:
        (tmp_path / name).write_bytes(b"PK")
    monkeypatch.setenv("PATH", "")
    assert delta_jars(tmp_path) == [tmp_path / name for name in JAR_NAMES]
    monkeypatch.setenv("FLUVIO_JARS_DIR", str(tmp_path))
    conf = delta_conf()
    assert conf["spark.jars"].split(",") == [str(tmp_path / name) for name in JAR_NAMES]
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.databricks.delta.snapshotPartitions"] == "1"  # one task per listing


def test_missing_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn there
    with pytest.raises(JarFetchError, match="mvn"):
        delta_jars(tmp_path / "jars")


def test_failing_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "mvn"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Could not resolve artifact' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    with pytest.raises(JarFetchError, match="Could not resolve artifact"):
        delta_jars(tmp_path / "jars")
    assert (tmp_path / ".gitignore").read_text() == "*\n"  # the cache stays out of git


def test_installed_project_exposes_the_shim_to_iter_modules(tmp_path: Path) -> None:
    """Spark's lookup worker finds sources with ``pkgutil.iter_modules()``; an import hook
    (setuptools' default editable mode) would hide the module from it."""
    code = (
        "import pkgutil, pyspark_fluvio\n"
        "names = {m.name for m in pkgutil.iter_modules()}\n"
        "print('pyspark_fluvio' in names, pyspark_fluvio.DefaultSource.name())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "fluvio"]


def _bare_python(tmp_path: Path) -> Path:
    """An interpreter without the project: this one, isolated from every site-packages."""
    script = tmp_path / "bare-python"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    script.chmod(0o755)
    return script


def test_a_worker_python_without_the_project_is_named_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = _bare_python(tmp_path)
    monkeypatch.setenv("PYSPARK_PYTHON", str(bare))
    with pytest.raises(InvalidConfigError) as info:
        local_session("never-started")  # fails before any JVM starts
    message = str(info.value)
    assert f"PYSPARK_PYTHON={bare} " in message
    assert "No module named" in message
    assert f"set PYSPARK_PYTHON={sys.executable} " in message


def test_an_interpreter_that_cannot_run_is_named(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-python")
    env = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": missing}
    with pytest.raises(InvalidConfigError, match=f"PYSPARK_DRIVER_PYTHON={missing} .*cannot run"):
        check_worker_python(env)
    check_worker_python({"PYSPARK_PYTHON": sys.executable})  # this interpreter: no check


_FIND_THE_FORMAT = """
import sys
from pyspark.sql import SparkSession
from datasource.session import local_session
if sys.argv[1] == "local_session":
    spark = local_session("lookup", jvm_connector=False)
else:
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \\
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1") \\
        .getOrCreate()
try:
    df = spark.read.format("fluvio").option("topic", "t").option("endpoint", sys.argv[2]).load()
    print("FOUND", ",".join(df.columns))
except Exception as exc:
    print("NOT FOUND", "DATA_SOURCE_NOT_FOUND" in str(exc))
finally:
    spark.stop()
"""


def test_local_session_finds_the_format_with_the_venv_off_path(
    tmp_path: Path, fluvio_cluster: LocalCluster
) -> None:
    """The venv's python run by path, not activated: ``python3`` on PATH lacks the project,
    so a plain session's lookup misses the format; ``local_session`` finds it (and its
    ``load()`` asks the cluster whether the topic is typed)."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin
    )
    strip = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k not in strip}
    env["PATH"] = path
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])  # this checkout
    found = {}
    for how in ("plain", "local_session"):
        done = subprocess.run(
            [sys.executable, "-c", _FIND_THE_FORMAT, how, fluvio_cluster.endpoint],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        found[how] = done.stdout.strip().splitlines()[-1]
    assert found == {
        "plain": "NOT FOUND True",
        "local_session": "FOUND key,value,topic,partition,offset,timestamp,timestampType",
    }
