"""The JVM connector's jar (``connector/``, issue 12): where it is, building it, using it.

With the jar on Spark's classpath, ``format("fluvio")`` resolves to the Java DataSource V2
connector (Spark looks up JVM sources by short name before Python ones); without it, the
Python source in this package serves. The jar is optional: the demo and the Python source
need no Maven and no JDK.

The jar lives in ``datasource/jars/`` (package data, so a wheel built after ``./dev
setup`` carries it), next to a stamp holding the digest of the sources it was built from.
``build_jar`` rebuilds it with Maven when it is missing or the digest differs ("stale").
Maven runs offline first and goes online only when offline resolution is what failed, so
once ``~/.m2`` holds the dependencies a build needs no network.

``datasource.session.local_session`` (the jobs, the demo, the tests) puts the jar on the
classpath when it is built; elsewhere ``configure(builder)`` adds it (see
docs/jvm-connector.md).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from spark_stream.errors import JarFetchError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "JAR_NAME",
    "add_jar",
    "build_jar",
    "configure",
    "jar_path",
    "junit_summary",
    "package_jar_dir",
    "run_junit",
    "source_dir",
    "sources_digest",
]

JAR_NAME = "fluvio-spark-connector.jar"
_STAMP_SUFFIX = ".sources"
_BUILT_JAR = "target/fluvio-spark-connector-0.1.0.jar"
_MVN_TIMEOUT_S = 900
_OFFLINE_MISS = "in offline mode"  # Maven's words when -o lacks an artifact
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Maven 3.8 colours even in batch mode


def package_jar_dir() -> Path:
    """``datasource/jars``: where the built jar is kept as package data."""
    return Path(__file__).resolve().parent / "jars"


def source_dir() -> Path | None:
    """The ``connector/`` Maven module of a source checkout; None in an installed wheel."""
    found = Path(__file__).resolve().parent.parent / "connector"
    return found if (found / "pom.xml").is_file() else None


def jar_path(jar_dir: Path | None = None) -> Path | None:
    """The connector jar, or None when it has not been built (``./dev setup`` builds it).

    Args:
        jar_dir: where to look (default ``package_jar_dir()``).
    """
    path = (jar_dir or package_jar_dir()) / JAR_NAME
    return path if path.is_file() else None


def add_jar(jars: str | None, jar: Path) -> str:
    """A ``spark.jars`` value with ``jar`` appended to ``jars`` (kept, never duplicated)."""
    entries = [j for j in (jars or "").split(",") if j.strip()]
    if str(jar) not in entries:
        entries.append(str(jar))
    return ",".join(entries)


def configure(
    builder: SparkSession.Builder, *, jar_dir: Path | None = None
) -> SparkSession.Builder:
    """Add the connector jar to a ``SparkSession.builder``, keeping any ``spark.jars`` set.

    Call it before ``getOrCreate()``: a running JVM does not pick up ``spark.jars``.

    Args:
        builder: the builder, changed in place and returned.
        jar_dir: where the jar is (default ``package_jar_dir()``).

    Raises:
        JarFetchError: the jar has not been built.
    """
    jar = jar_path(jar_dir)
    if jar is None:
        missing = (jar_dir or package_jar_dir()) / JAR_NAME
        raise JarFetchError(
            f"the fluvio JVM connector jar is not built ({missing} is "
            "missing): run ./dev setup (it needs Maven and a JDK 17), or leave the jar out "
            "and the Python data source serves format('fluvio')"
        )
    current = builder._options.get("spark.jars")  # the builder has no getter
    return builder.config("spark.jars", add_jar(None if current is None else str(current), jar))


def sources_digest(sources: Path) -> str:
    """sha256 over the pom and every file under ``src/main`` (paths and contents)."""
    digest = hashlib.sha256()
    files = [sources / "pom.xml", *sorted((sources / "src" / "main").rglob("*"))]
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(sources).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _stamp(jar_dir: Path) -> Path:
    return jar_dir / (JAR_NAME + _STAMP_SUFFIX)


def build_jar(
    sources: Path | None = None, jar_dir: Path | None = None, *, force: bool = False
) -> Path:
    """Build the jar with Maven when it is missing or stale; return its path.

    Args:
        sources: the Maven module (default ``source_dir()``).
        jar_dir: where the jar goes (default ``package_jar_dir()``).
        force: build even when the jar is current.

    Raises:
        JarFetchError: no ``connector/`` sources, ``mvn`` is not installed, or Maven failed.
    """
    sources = sources or source_dir()
    jar_dir = jar_dir or package_jar_dir()
    if sources is None:
        raise JarFetchError("no connector/ Maven module here: the jar is built from a checkout")
    digest = sources_digest(sources)
    target = jar_dir / JAR_NAME
    if not force and target.is_file() and _read(_stamp(jar_dir)) == digest:
        return target
    _mvn(["package", "-DskipTests"], sources, "build the JVM connector jar")
    built = sources / _BUILT_JAR
    if not built.is_file():
        raise JarFetchError(f"mvn package succeeded but left no {built}")
    jar_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, target)
    _stamp(jar_dir).write_text(digest + "\n")
    return target


def run_junit(sources: Path | None = None) -> None:
    """Run the connector's JUnit tests (``mvn test``).

    Raises:
        JarFetchError: no sources, no ``mvn``, or a test failed (Maven's report is printed).
    """
    sources = sources or source_dir()
    if sources is None:
        raise JarFetchError("no connector/ Maven module here: its tests run from a checkout")
    _mvn(["test"], sources, "run the JVM connector's JUnit tests", echo=True)
    print(junit_summary(sources / "target" / "surefire-reports"))


def junit_summary(reports: Path) -> str:
    """One line from Surefire's XML reports: ``JUnit: N passed, N failed, N skipped``."""
    import xml.etree.ElementTree as ET

    tests = failed = skipped = 0
    for report in sorted(reports.glob("TEST-*.xml")):
        suite = ET.parse(report).getroot()
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return f"JUnit: {tests - failed - skipped} passed, {failed} failed, {skipped} skipped"


def _read(path: Path) -> str | None:
    return path.read_text().strip() if path.is_file() else None


def _mvn(goals: list[str], cwd: Path, what: str, *, echo: bool = False) -> None:
    """Run Maven offline, then online only if offline resolution is what failed."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarFetchError(
            f"Maven is needed to {what}: install 'mvn' and a JDK 17 (e.g. apt-get install "
            "maven openjdk-17-jdk-headless)"
        )
    done = _run([mvn, "-B", "-q", "-o", *goals], cwd, what)
    if done.returncode != 0 and _OFFLINE_MISS in done.stdout + done.stderr:
        done = _run([mvn, "-B", "-q", *goals], cwd, what)
    out, err = _ANSI.sub("", done.stdout), _ANSI.sub("", done.stderr)
    if echo or done.returncode != 0:
        sys.stdout.write(out)
        sys.stderr.write(err)
    if done.returncode != 0:
        tail = (out + err).strip().splitlines()[-5:]
        raise JarFetchError(f"mvn could not {what}: {' | '.join(tail)}")


def _run(cmd: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise JarFetchError(f"mvn took over {_MVN_TIMEOUT_S}s to {what}") from None


def main(argv: list[str]) -> int:
    """``python -m datasource.connector_jar build|test`` (what ``./dev`` runs)."""
    if argv not in (["build"], ["test"]):
        print("usage: python -m datasource.connector_jar build|test", file=sys.stderr)
        return 2
    try:
        if argv == ["build"]:
            build_jar()
        else:
            run_junit()
    except JarFetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
