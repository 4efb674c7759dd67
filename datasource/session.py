"""Local SparkSession set-up shared by the jobs, the demo, the benchmark and the tests.

Delta: the pip package ``delta-spark==4.4.1`` would have Spark resolve a jar that Maven
Central does not hold, so the 4.4.0 jars are fetched once with ``mvn dependency:copy``
into a cache folder and handed to Spark as ``spark.jars`` (see ``docs/decisions.md``).

Worker interpreter. Spark's Python workers must run an interpreter that has this project
installed, or Spark's data-source lookup does not find ``fluvio`` (``DATA_SOURCE_NOT_FOUND``)
and Python UDFs cannot unpickle. In a session started from Python, Spark 4.2 picks them
from the environment the JVM inherits, not from ``spark.pyspark.python`` (only
spark-submit reads that): the data-source lookup, and the source's own planner, reader
and writer workers, run ``PYSPARK_DRIVER_PYTHON``, else ``PYSPARK_PYTHON``, else
``python3`` from ``PATH``; Python UDFs run ``PYSPARK_PYTHON``, else ``python3``. The
venv's python called without activating the venv therefore gives workers a ``python3``
without the project. ``local_session`` sets both variables to ``sys.executable`` unless
they are set, and checks any other value (``check_worker_python``), so a wrong one fails
at once with an ``InvalidConfigError`` naming the variable and the value to set.

The JVM connector. When its jar is built (``./dev setup``), ``local_session`` puts it on
the classpath, so ``format("fluvio")`` resolves to the Java connector (every trigger,
including ``Trigger.Continuous`` and real-time mode); when it is not, the session starts
without it, logs one warning saying so, and the Python data source serves batch and
micro-batch (docs/jvm-connector.md).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from datasource.connector_jar import add_jar, jar_path
from spark_stream.errors import InvalidConfigError, JarFetchError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DELTA_ARTIFACTS",
    "WORKER_PYTHON_VARIABLES",
    "check_worker_python",
    "default_jar_dir",
    "delta_jars",
    "local_session",
    "delta_conf",
    "session_settings",
]

DELTA_ARTIFACTS = (
    ("io.delta", "delta-spark_4.2_2.13", "4.4.0"),
    ("io.delta", "delta-storage", "4.4.0"),
)
log = logging.getLogger(__name__)

_MVN_TIMEOUT_S = 600
_CHECK_TIMEOUT_S = 120
WORKER_PYTHON_VARIABLES = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
"""The variables Spark reads to start its Python workers (see the module doc)."""


def default_jar_dir() -> Path:
    """``FLUVIO_JARS_DIR``, else ``.cache/jars`` of the source checkout."""
    env = os.environ.get("FLUVIO_JARS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / ".cache" / "jars"


def delta_jars(cache_dir: Path | None = None) -> list[Path]:
    """The Delta jars for Spark 4.2, fetched with Maven into ``cache_dir`` when missing.

    Raises:
        JarFetchError: ``mvn`` is not installed, or it failed (offline, no such version).
    """
    cache_dir = cache_dir or default_jar_dir()
    paths = [cache_dir / f"{artifact}-{version}.jar" for _, artifact, version in DELTA_ARTIFACTS]
    if all(p.is_file() for p in paths):
        return paths
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarFetchError(
            "Delta needs Maven to fetch its jars: install 'mvn' (e.g. apt-get install maven) "
            f"or put {', '.join(p.name for p in paths)} into {cache_dir} (FLUVIO_JARS_DIR)"
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    _ignore_in_git(cache_dir)
    for (group, artifact, version), path in zip(DELTA_ARTIFACTS, paths, strict=True):
        if path.is_file():
            continue
        cmd = [
            mvn, "-q", "-B", "dependency:copy", f"-Dartifact={group}:{artifact}:{version}",
            f"-DoutputDirectory={cache_dir}",
        ]  # fmt: skip
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise JarFetchError(f"mvn took over {_MVN_TIMEOUT_S}s fetching {artifact}") from None
        if done.returncode != 0 or not path.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise JarFetchError(
                f"mvn could not fetch {group}:{artifact}:{version}: {' | '.join(tail)}"
            )
    return paths


def _ignore_in_git(cache_dir: Path) -> None:
    """Keep the fetched jars out of ``git status`` without touching the tracked .gitignore."""
    root = cache_dir.parent if cache_dir.name == "jars" else cache_dir
    marker = root / ".gitignore"
    if not marker.exists():
        marker.write_text("*\n")


def delta_conf(cache_dir: Path | None = None) -> dict[str, str]:
    """Spark settings that enable Delta Lake with the cached jars."""
    jars = delta_jars(cache_dir)
    return {
        "spark.jars": ",".join(str(p) for p in jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # Delta keeps a table's snapshot (one row per live file) in this many cached
        # partitions (default 50: on a small local machine that alone takes seconds per
        # read of a small table), and every query lists its files from them with a Spark
        # job of that many tasks. One partition: a tier table's state is a few hundred
        # bytes per file, and one task per query costs less than two (docs/decisions.md).
        "spark.databricks.delta.snapshotPartitions": "1",
    }


def _spark_python_path() -> list[str]:
    """The archives Spark puts on its workers' ``PYTHONPATH`` (pyspark, py4j)."""
    import pyspark

    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    return sorted(str(p) for p in (home / "python" / "lib").glob("*.zip"))


@functools.cache
def _import_failure(python: str, pythonpath: str) -> str | None:
    """Why ``python`` cannot import the source as a Spark worker would; None if it can."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    try:
        done = subprocess.run(
            [python, "-c", "import pyspark_fluvio"],
            env=env,
            capture_output=True,
            text=True,
            timeout=_CHECK_TIMEOUT_S,
            check=False,
        )
    except OSError as exc:
        return f"cannot run it: {exc.strerror or exc}"
    except subprocess.TimeoutExpired:
        return f"it did not finish importing pyspark_fluvio within {_CHECK_TIMEOUT_S}s"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return f"it cannot import pyspark_fluvio: {lines[-1] if lines else done.returncode}"


def check_worker_python(env: Mapping[str, str] | None = None) -> None:
    """Check that the interpreters Spark will start its Python workers with have the project.

    Values equal to ``sys.executable`` pass without a check; any other is run once per
    process (a subprocess importing ``pyspark_fluvio`` with the workers' ``PYTHONPATH``).

    Args:
        env: the environment the JVM will inherit (default ``os.environ``).

    Raises:
        InvalidConfigError: naming the variable, its value, why it fails, and what to set.
    """
    env = os.environ if env is None else env
    pythonpath = os.pathsep.join([*_spark_python_path(), *filter(None, [env.get("PYTHONPATH")])])
    for variable in WORKER_PYTHON_VARIABLES:
        python = env.get(variable)
        if not python or python == sys.executable:
            continue
        failure = _import_failure(python, pythonpath)
        if failure is not None:
            raise InvalidConfigError(
                f"{variable}={python} cannot run Spark's Python workers for this project "
                f"({failure}), so format('fluvio') or Python UDFs would fail there: set "
                f"{variable}={sys.executable} (the interpreter of this driver), or install "
                "the project into that interpreter"
            )


def local_session(
    app_name: str = "spark-stream",
    *,
    master: str = "local[2]",
    delta: bool = False,
    jvm_connector: bool | None = None,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """A local SparkSession tuned for this machine (no UI, 2 shuffle partitions).

    Args:
        app_name: the application name.
        master: the Spark master URL.
        delta: enable Delta Lake (fetches its jars on first use).
        jvm_connector: put the JVM connector's jar on the classpath, so ``format("fluvio")``
            resolves to it instead of the Python source. ``None`` (default): when the jar
            is built, else the Python source serves and a warning is logged; ``True``:
            the jar is required; ``False``: the Python source.
        conf: extra settings, applied last; a ``spark.jars`` there is kept, with the
            Delta and connector jars appended.

    Raises:
        InvalidConfigError: ``PYSPARK_PYTHON`` or ``PYSPARK_DRIVER_PYTHON`` names an
            interpreter that cannot import the project (see the module doc).
        JarFetchError: with ``delta``, the Delta jars cannot be fetched; with
            ``jvm_connector=True``, the connector jar is not built.
    """
    from pyspark.sql import SparkSession

    for variable in WORKER_PYTHON_VARIABLES:
        os.environ.setdefault(variable, sys.executable)
    check_worker_python()
    settings = session_settings(delta=delta, jvm_connector=jvm_connector, conf=conf)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def session_settings(
    *,
    delta: bool = False,
    jvm_connector: bool | None = None,
    conf: dict[str, str] | None = None,
    connector_jar_dir: Path | None = None,
) -> dict[str, str]:
    """The settings ``local_session`` starts Spark with (arguments as there).

    Every jar lands in one ``spark.jars``: ``conf``'s first, then Delta's, then the
    connector's. ``connector_jar_dir`` is where the connector jar is looked for (default
    the package's, see ``datasource.connector_jar``).

    Raises:
        JarFetchError: as ``local_session``.
    """
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.sql.streaming.stopActiveRunOnRestart": "true",
    }
    jars = (conf or {}).get("spark.jars")
    if delta:
        delta_settings = delta_conf()
        for delta_jar in delta_settings.pop("spark.jars").split(","):
            jars = add_jar(jars, Path(delta_jar))
        settings.update(delta_settings)
    connector = _connector_jar(jvm_connector, connector_jar_dir)
    if connector is not None:
        jars = add_jar(jars, connector)
    settings.update(conf or {})
    if jars:
        settings["spark.jars"] = jars
    return settings


def _connector_jar(wanted: bool | None, jar_dir: Path | None) -> Path | None:
    """The connector jar to put on the classpath, per ``local_session``'s ``jvm_connector``."""
    if wanted is False:
        return None
    connector = jar_path(jar_dir)
    if connector is not None:
        return connector
    if wanted:
        raise JarFetchError(
            "local_session(jvm_connector=True) needs the JVM connector jar: run ./dev setup"
        )
    log.warning(
        "the fluvio JVM connector jar is not built, so format('fluvio') uses the Python data "
        "source (batch and micro-batch; no Trigger.Continuous or real-time mode): run "
        "./dev setup to build it (Maven and a JDK 17)"
    )
    return None
