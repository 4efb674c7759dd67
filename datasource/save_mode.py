"""``df.write.format("fluvio").save()`` with no ``mode(...)`` appends.

Spark's ``DataFrameWriter`` starts in ``ErrorIfExists`` mode and, for a Python data
source, refuses every mode but ``append`` and ``overwrite`` on the JVM side, before the
source is asked (``UNSUPPORTED_DATA_SOURCE_SAVE_MODE``). A topic is a log: appending is
the only meaning a write has, and Spark's Kafka sink takes the default mode as append
too. No data source hook exists for this, so ``install_default_append`` wraps PySpark's
classic ``DataFrameWriter.save``: when the format is ``fluvio`` and the mode is still
Spark's default (``mode("error")`` looks the same to it), the save runs in ``append``
mode. Any other format, or another mode (``overwrite`` is then rejected by the source
with its own message, ``ignore`` by Spark), is left alone.

Importing the ``datasource`` package installs it (``pyspark_fluvio``, ``local_session``
and the jobs all import it); a driver that never imports the project (the format found
by Spark's lookup alone) keeps Spark's behaviour and needs ``mode("append")``.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["install_default_append"]

_MARK = "_fluvio_default_append"


def _takes_default_append(jwrite: Any, fmt: str | None) -> bool:
    """True when the writer targets ``fluvio`` in Spark's default ``ErrorIfExists`` mode."""
    source = fmt if fmt is not None else str(jwrite.source())
    return source.strip().lower() == "fluvio" and str(jwrite.curmode().name()) == "ErrorIfExists"


def install_default_append() -> None:
    """Make ``save()`` of ``format("fluvio")`` append when no mode was set (idempotent)."""
    from pyspark.sql.readwriter import DataFrameWriter

    original = DataFrameWriter.save
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def save(
        self: DataFrameWriter,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: Any,
    ) -> None:
        if mode is None and _takes_default_append(self._jwrite, format):
            mode = "append"
        original(self, path, format, mode, partitionBy, **options)

    setattr(save, _MARK, True)
    DataFrameWriter.save = save  # type: ignore[method-assign]
