"""How a job's command line ends: like the ``fluvio`` CLI, one line per failure.

A typed error (``FluvioError``, also when Spark wrapped it, see
``datasource.spark_errors``) prints ``error: <message>`` on stderr and exits 1, as does
a Spark ``AnalysisException`` (a missing table path, an unknown column: the command
asked for something that is not there) and an ``OSError`` (files named on the command
line). Bad usage exits 2 through argparse, Ctrl-C 130. Anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from pyspark.errors import AnalysisException

from datasource.spark_errors import typed_error

__all__ = ["run_job"]


def _message(exc: Exception) -> str | None:
    """The one line to print for ``exc``, or None when it is not the user's error."""
    typed = typed_error(exc)
    if typed is not None:
        return str(typed)
    if isinstance(exc, AnalysisException):
        lines = str(exc).strip().splitlines()
        return lines[0] if lines else type(exc).__name__
    if isinstance(exc, OSError):
        return str(exc)
    return None


def run_job(body: Callable[[], int]) -> int:
    """Run a job's ``body`` and return its exit code, reporting failures in one line."""
    try:
        return body()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        message = _message(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1
