"""Auto-registration shim: Spark registers the ``DefaultSource`` of every importable
top-level ``pyspark_*`` module, so ``format("fluvio")`` works with no ``register()``.

It also hands out the JVM connector's jar: ``jar_path()`` (None when not built) for
``--jars`` or a cluster library, and ``configure(builder)``, which adds it to a
``SparkSession.builder``; with the jar, Spark picks the JVM connector for ``fluvio``.
"""

from __future__ import annotations

from datasource.connector_jar import configure, jar_path
from datasource.source import FluvioDataSource as DefaultSource

__all__ = ["DefaultSource", "configure", "jar_path"]
