"""The cells of a Databricks notebook in source format, and which of them run off Databricks.

A notebook exported as source is a Python file whose first line is
``# Databricks notebook source`` and whose cells are separated by
``# COMMAND ----------`` lines. The rule for running one on local Spark, in this order:

- a cell whose every line is ``# MAGIC ...`` is a magic (``%md``, ``%pip``, ``%sh``...):
  skipped (the wheel is installed in the test's venv already);
- a cell that names ``dbutils`` uses Databricks' utilities (restarting Python, widgets):
  skipped; the test gives the names it assigns (``defines``) instead;
- every other cell is Python and runs, in order, in one namespace holding ``spark`` and
  ``display`` as a notebook does.

Pure: text in, cells out.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["Cell", "HEADER", "MAGIC", "DATABRICKS", "PYTHON", "read_cells"]

HEADER = "# Databricks notebook source"
MAGIC, DATABRICKS, PYTHON = "magic", "databricks", "python"
_SEPARATOR = re.compile(r"^# COMMAND -+\s*$", re.MULTILINE)
_MAGIC_LINE = re.compile(r"^# MAGIC( |$)")
_MAGIC_WORD = re.compile(r"^# MAGIC\s*(%\w+)")


@dataclass(frozen=True)
class Cell:
    """One cell: its kind, source, magic word (``%pip``) and the names it assigns."""

    kind: str
    source: str
    magic: str = ""
    defines: frozenset[str] = frozenset()


def _assigned(source: str) -> frozenset[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return frozenset(names)


def read_cells(text: str) -> list[Cell]:
    """The notebook's cells, in order.

    Raises:
        ValueError: the text is not a notebook in Databricks' source format.
    """
    first, _, body = text.partition("\n")
    if first.strip() != HEADER:
        raise ValueError(f"not a Databricks source notebook: first line {first!r}")
    cells = []
    for chunk in _SEPARATOR.split(body):
        source = chunk.strip("\n")
        if not source.strip():
            continue
        lines = [line for line in source.splitlines() if line.strip()]
        if all(_MAGIC_LINE.match(line) for line in lines):
            word = _MAGIC_WORD.match(lines[0])
            cells.append(Cell(MAGIC, source, magic=word.group(1) if word else ""))
        elif re.search(r"\bdbutils\b", source):
            cells.append(Cell(DATABRICKS, source, defines=_assigned(source)))
        else:
            cells.append(Cell(PYTHON, source))
    return cells
