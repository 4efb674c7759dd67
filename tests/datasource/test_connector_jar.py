"""The JVM connector's jar: finding it, adding it to a builder, building it when stale.

The build test runs real Maven on a copy of ``connector/`` (offline once ``~/.m2`` holds
the dependencies; it is skipped where ``mvn`` is not installed, as on a machine that only
runs the demo).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import pyspark_fluvio
from datasource.connector_jar import (
    JAR_NAME,
    add_jar,
    build_jar,
    configure,
    jar_path,
    junit_summary,
    source_dir,
    sources_digest,
)
from datasource.session import session_settings
from spark_stream.errors import JarFetchError

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_shim_exports_the_jar_helpers() -> None:
    assert pyspark_fluvio.jar_path is jar_path
    assert pyspark_fluvio.configure is configure


def test_no_jar_means_none(tmp_path: Path) -> None:
    assert jar_path(tmp_path) is None
    (tmp_path / JAR_NAME).write_bytes(b"PK")
    assert jar_path(tmp_path) == tmp_path / JAR_NAME


def test_add_jar_keeps_what_is_set_and_never_duplicates() -> None:
    jar = Path("/opt/c.jar")
    assert add_jar(None, jar) == "/opt/c.jar"
    assert add_jar("/a.jar,/b.jar", jar) == "/a.jar,/b.jar,/opt/c.jar"
    assert add_jar("/a.jar,/opt/c.jar", jar) == "/a.jar,/opt/c.jar"
    assert add_jar(" ,", jar) == "/opt/c.jar"


def test_configure_appends_the_jar_to_spark_jars(tmp_path: Path) -> None:
    (tmp_path / JAR_NAME).write_bytes(b"PK")
    builder = SparkSession.builder.config("spark.jars", "/elsewhere/delta.jar")
    assert configure(builder, jar_dir=tmp_path) is builder
    assert builder._options["spark.jars"] == f"/elsewhere/delta.jar,{tmp_path / JAR_NAME}"
    bare = configure(SparkSession.builder, jar_dir=tmp_path)
    assert bare._options["spark.jars"] == str(tmp_path / JAR_NAME)


def test_configure_without_a_built_jar_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JarFetchError, match=r"not built .*run ./dev setup"):
        configure(SparkSession.builder, jar_dir=tmp_path)


def _copy_sources(tmp_path: Path) -> Path:
    sources = source_dir()
    assert sources is not None
    copy = tmp_path / "connector"
    copy.mkdir()
    shutil.copy(sources / "pom.xml", copy / "pom.xml")
    shutil.copytree(sources / "src" / "main", copy / "src" / "main")
    return copy


def test_the_digest_follows_main_sources_only(tmp_path: Path) -> None:
    copy = _copy_sources(tmp_path)
    before = sources_digest(copy)
    (copy / "src" / "test").mkdir()
    (copy / "src" / "test" / "T.java").write_text("class T {}\n")
    assert sources_digest(copy) == before
    java = next((copy / "src" / "main").rglob("*.java"))
    java.write_text(java.read_text() + "\n// changed\n")
    assert sources_digest(copy) != before


def test_a_missing_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = _copy_sources(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn there
    with pytest.raises(JarFetchError, match="Maven is needed"):
        build_jar(copy, tmp_path / "jars")


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_build_only_when_missing_or_stale(tmp_path: Path) -> None:
    copy = _copy_sources(tmp_path)
    out = tmp_path / "jars"
    jar = build_jar(copy, out)
    assert jar == out / JAR_NAME
    with zipfile.ZipFile(jar) as zf:
        names = set(zf.namelist())
    assert "io/sparkstream/fluvio/records/BatchHeader.class" in names
    assert any(n.startswith("io/sparkstream/shaded/msgpack/") for n in names)  # relocated
    assert not any(n.startswith("org/msgpack/") for n in names)
    built_at = jar.stat().st_mtime_ns
    shutil.rmtree(copy / "target")  # a rebuild would need it: proves none happens
    assert build_jar(copy, out) == jar
    assert jar.stat().st_mtime_ns == built_at
    java = copy / "src" / "main" / "java" / "io" / "sparkstream" / "fluvio" / "records"
    (java / "BatchHeader.java").write_text((java / "BatchHeader.java").read_text() + "\n")
    build_jar(copy, out)
    assert (copy / "target").is_dir()  # stale: rebuilt
    assert (out / (JAR_NAME + ".sources")).read_text().strip() == sources_digest(copy)


def test_junit_summary_counts_surefire_reports(tmp_path: Path) -> None:
    (tmp_path / "TEST-a.xml").write_text(
        '<testsuite name="a" tests="5" failures="1" errors="1" skipped="1"/>'
    )
    (tmp_path / "TEST-b.xml").write_text('<testsuite name="b" tests="3" failures="0"/>')
    assert junit_summary(tmp_path) == "JUnit: 5 passed, 2 failed, 1 skipped"


def test_module_cli_refuses_unknown_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "datasource.connector_jar", "deploy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "usage" in done.stderr


def test_sessions_take_the_jar_when_it_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The project's own sessions (jobs, demo, tests) put the jar on the classpath when it
    is built, joined with any other jars in one spark.jars; without it they fall back to
    the Python source and log why. ``jvm_connector`` forces either way."""
    (tmp_path / JAR_NAME).write_bytes(b"PK")
    for name in ("delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar"):
        (tmp_path / name).write_bytes(b"PK")
    monkeypatch.setenv("FLUVIO_JARS_DIR", str(tmp_path))
    connector = str(tmp_path / JAR_NAME)
    assert session_settings(connector_jar_dir=tmp_path)["spark.jars"] == connector
    assert "spark.jars" not in session_settings(jvm_connector=False, connector_jar_dir=tmp_path)
    both = session_settings(delta=True, conf={"spark.jars": "/x.jar"}, connector_jar_dir=tmp_path)
    assert both["spark.jars"].split(",") == [
        "/x.jar",
        str(tmp_path / "delta-spark_4.2_2.13-4.4.0.jar"),
        str(tmp_path / "delta-storage-4.4.0.jar"),
        connector,
    ]
    with caplog.at_level(logging.WARNING, logger="datasource.session"):
        fallback = session_settings(connector_jar_dir=tmp_path / "none")
    assert "spark.jars" not in fallback
    [warning] = [r.getMessage() for r in caplog.records]
    assert "jar is not built, so format('fluvio') uses the Python data source" in warning
    assert "./dev setup" in warning
    with pytest.raises(JarFetchError, match="jvm_connector=True"):
        session_settings(jvm_connector=True, connector_jar_dir=tmp_path / "none")
