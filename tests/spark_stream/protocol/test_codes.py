"""The generated error code table covers every error type once, in code order."""

from __future__ import annotations

from pathlib import Path

from spark_stream import errors
from spark_stream.protocol.codes import error_classes, error_table


def test_table_lists_every_error_once_in_code_order() -> None:
    classes = error_classes()
    codes = [cls.code for cls in classes]
    assert codes == sorted(set(codes))
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, errors.FluvioError):
            assert obj in classes
            assert f"| {obj.code} | `{obj.__name__}` |" in error_table()
    assert "| 10 | `NotLeaderError` | yes |" in error_table()


def documented_table(doc: Path) -> list[str]:
    """The lines of the first Markdown table under ``## Error codes`` in ``doc``."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Error codes")
    table: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return table


def test_protocol_doc_embeds_the_generated_table() -> None:
    """``docs/protocol.md`` must match ``python -m spark_stream.protocol.codes`` exactly.

    After adding an error, refresh the doc's table with that command's output.
    """
    doc = Path(__file__).resolve().parents[3] / "docs" / "protocol.md"
    assert documented_table(doc) == error_table().splitlines()
