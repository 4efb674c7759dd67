"""The error code table of the wire protocol, generated from ``spark_stream.errors``.

``errors.py`` is the one source of truth; ``docs/protocol.md`` embeds the output of
``python -m spark_stream.protocol.codes`` so the document can be refreshed in one step.
"""

from __future__ import annotations

from spark_stream.errors import FluvioError

__all__ = ["error_classes", "error_table"]


def error_classes() -> list[type[FluvioError]]:
    """Every error type, ordered by code."""
    found: dict[int, type[FluvioError]] = {}
    todo: list[type[FluvioError]] = [FluvioError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.code, cls)
        todo.extend(cls.__subclasses__())
    return [found[code] for code in sorted(found)]


def error_table() -> str:
    """A Markdown table: code, type, retriable, meaning."""
    rows = ["| code | error | retriable | meaning |", "|---:|---|---|---|"]
    for cls in error_classes():
        doc = (cls.__doc__ or cls.__name__).strip().splitlines()[0]
        rows.append(
            f"| {cls.code} | `{cls.__name__}` | {'yes' if cls.retriable else 'no'} | {doc} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(error_table())
