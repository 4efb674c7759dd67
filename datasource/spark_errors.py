"""Find the typed error behind an exception Spark raised.

An error the data source raises on the driver's planner worker or on an executor reaches
the caller wrapped: an ``AnalysisException`` (``PYTHON_DATA_SOURCE_ERROR``), a
``StreamingQueryException``, a ``PythonException`` or a raw ``Py4JJavaError``, whose
text holds the Python traceback ending in ``spark_stream.errors.SomeError: message``.
``typed_error`` finds the last such line (the error finally raised), and rebuilds that
``FluvioError`` with its message, so a job can answer ``error: <message>`` like the CLI
instead of printing Spark's 40-line trace.
"""

from __future__ import annotations

import re

from spark_stream.errors import FluvioError

__all__ = ["typed_error"]

_RAISED = re.compile(r"(?<![\w.])((?:\w+\.)+)(\w+): ([^\n]*)")
"""``package.module.ClassName: message`` on a traceback's last line."""
_MAX_CHAIN = 8


def _error_types() -> dict[str, type[FluvioError]]:
    """Every ``FluvioError`` class by qualified name (``module.Class``)."""
    found: dict[str, type[FluvioError]] = {}
    todo: list[type[FluvioError]] = [FluvioError]
    while todo:
        cls = todo.pop()
        found[f"{cls.__module__}.{cls.__name__}"] = cls
        todo.extend(cls.__subclasses__())
    return found


def typed_error_in_text(text: str) -> FluvioError | None:
    """The last ``FluvioError`` a traceback text names, rebuilt; None if it names none."""
    types = _error_types()
    last: FluvioError | None = None
    for match in _RAISED.finditer(text):
        cls = types.get(f"{match.group(1)}{match.group(2)}")
        if cls is not None:
            last = cls(match.group(3).strip())
    return last


def typed_error(exc: BaseException) -> FluvioError | None:
    """``exc`` itself if typed, else the typed error Spark wrapped in it (or its causes).

    Returns:
        The ``FluvioError``, or None when ``exc`` carries none (a bug, or Spark's own
        error).
    """
    seen: BaseException | None = exc
    for _ in range(_MAX_CHAIN):
        if seen is None:
            break
        if isinstance(seen, FluvioError):
            return seen
        found = typed_error_in_text(str(seen))
        if found is not None:
            return found
        seen = seen.__cause__ or seen.__context__
    return None
