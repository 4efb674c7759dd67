"""Auto-registration shim: Spark registers the ``DefaultSource`` of every importable
top-level ``pyspark_*`` module, so ``format("fluvio")`` works with no ``register()``."""

from __future__ import annotations

from datasource.source import FluvioDataSource as DefaultSource

__all__ = ["DefaultSource"]
