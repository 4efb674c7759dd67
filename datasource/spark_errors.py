"""Find the typed error behind an exception Spark raised.

An error the data source raises on the driver's planner worker or on an executor reaches
the caller wrapped: an ``AnalysisException`` (``PYTHON_DATA_SOURCE_ERROR``), a
``StreamingQueryException``, a ``PythonException`` or a raw ``Py4JJavaError``, whose
text holds the Python traceback ending in ``spark_stream.errors.SomeError: message``.
``typed_error`` finds the last such line (the error finally raised), and rebuilds that
``FluvioError`` with its message, so a job can answer ``error: <message>`` like the CLI
instead of printing Spark's 40-line trace.

The JVM connector raises ``io.sparkstream.fluvio.errors.FluvioException``, which carries
the wire error code. Spark's message does not always name it (a failed stream's
``STREAM_FAILED`` quotes only the cause's message), so the Java exception PySpark keeps
(``java_exception`` of a ``Py4JJavaError``, ``_origin`` of the exceptions it converts)
is followed through its causes, and the code is mapped back with ``error_for_code``.
"""

from __future__ import annotations

import re
from typing import Any

from spark_stream.errors import FluvioError, error_for_code

__all__ = ["typed_error"]

_RAISED = re.compile(r"(?<![\w.])((?:\w+\.)+)(\w+): ([^\n]*)")
"""``package.module.ClassName: message`` on a traceback's last line."""
_MAX_CHAIN = 8
_JVM_ERROR = "io.sparkstream.fluvio.errors.FluvioException"


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
        found = typed_error_in_text(str(seen)) or _jvm_typed_error(seen)
        if found is not None:
            return found
        seen = seen.__cause__ or seen.__context__
    return None


def _jvm_typed_error(exc: BaseException) -> FluvioError | None:
    """The JVM connector's ``FluvioException`` behind ``exc``, rebuilt; None if none."""
    from py4j.protocol import Py4JError

    java: Any = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    try:
        for _ in range(_MAX_CHAIN):
            if java is None:
                return None
            if java.getClass().getName() == _JVM_ERROR:
                return error_for_code(int(java.code().code()), str(java.getMessage()))
            java = java.getCause()
    except Py4JError:  # the JVM is gone: only the text is left
        return None
    return None
