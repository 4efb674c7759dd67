"""The ``fluvio`` command line (console script ``fluvio``, or ``python -m spark_stream.cli``)."""

from __future__ import annotations

from spark_stream.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
