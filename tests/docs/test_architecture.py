"""docs/architecture.md names real modules and tests, so a newcomer's one look is right."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
_CODE = re.compile(r"`([^`]+)`")


def named_paths(cell: str) -> list[str]:
    """The repository paths a table cell names: ``a/b.py`` and, after it, bare
    ``c.py`` or ``c/`` in the same directory (``sc/kv/redis_store.py``, ``_lua.py``)."""
    paths: list[str] = []
    folder = ""
    for token in _CODE.findall(cell):
        if " " in token or not re.fullmatch(r"[\w./-]+", token):
            continue
        if "/" in token.rstrip("/"):
            paths.append(token)
            folder = token if token.endswith("/") else token.rsplit("/", 1)[0] + "/"
        elif token.endswith((".py", "/")) and folder:
            paths.append(folder + token)
    return paths


def test_every_module_and_test_the_map_names_exists() -> None:
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| ")]
    named = [p for row in rows for cell in row.split("|")[2:] for p in named_paths(cell)]
    assert len(named) > 80  # the tables were read
    missing = sorted({p for p in named if not (ROOT / p).exists()})
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_cell_reader_resolves_short_names_against_the_last_folder() -> None:
    cell = " `sc/kv/redis_store.py`, `_lua.py` and `spark_stream/protocol/` with `frame.py` "
    assert named_paths(cell) == [
        "sc/kv/redis_store.py",
        "sc/kv/_lua.py",
        "spark_stream/protocol/",
        "spark_stream/protocol/frame.py",
    ]
