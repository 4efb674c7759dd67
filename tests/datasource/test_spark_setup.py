"""Delta jar fetching (no network needed) and auto-registration through the install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from datasource.session import DELTA_ARTIFACTS, delta_conf, delta_jars
from spark_stream.errors import JarFetchError

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
