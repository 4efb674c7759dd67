"""How the CLI prints: tables for people, JSON or YAML for scripts, a progress bar.

Every listing command builds plain rows (dicts of str/int/None) once and renders them
with ``emit`` in the format asked for (``-O table|json|yaml``), so the three formats
always show the same data.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import yaml

__all__ = ["FORMATS", "render_table", "emit", "ProgressBar"]

FORMATS = ("table", "json", "yaml")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value)


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Left-aligned columns with an upper-case header; ``-`` for missing values."""
    header = [c.upper() for c in columns]
    body = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join(lines)


def emit(
    data: Any,
    fmt: str,
    *,
    columns: Sequence[str] | None = None,
    out: TextIO | None = None,
) -> None:
    """Print ``data`` as a table (a list of rows with ``columns``), JSON or YAML."""
    out = out or sys.stdout
    if fmt == "json":
        out.write(json.dumps(data, indent=2, default=str) + "\n")
    elif fmt == "yaml":
        out.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    else:
        rows = data if isinstance(data, list) else [data]
        cols = list(columns) if columns is not None else list(rows[0]) if rows else []
        out.write(render_table(rows, cols) + "\n")


class ProgressBar:
    """A one-line progress bar on a terminal (silent elsewhere unless forced).

    Args:
        total: the amount that is 100% (bytes of a file).
        label: shown before the bar.
        enabled: None = only when ``stream`` is a terminal.
    """

    def __init__(
        self, total: int, label: str, *, enabled: bool | None = None, stream: TextIO | None = None
    ) -> None:
        self.stream = stream or sys.stderr
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._last = 0.0
        self._start = time.monotonic()

    def advance(self, amount: int) -> None:
        """Add ``amount`` and redraw at most ten times a second."""
        self.done += amount
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(1.0, self.done / self.total)
        width = 30
        filled = int(frac * width)
        rate = self.done / max(now - self._start, 1e-6) / 1e6
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {frac:6.1%} {rate:7.2f} MB/s")
        self.stream.flush()

    def close(self) -> None:
        """Finish the line."""
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
