"""Run one Python example of the docs, read from stdin, as a reader would run it.

Usage: ``python -m tests.docs.block_runner DOC LINE [--spark]``.

The code is compiled under the name ``DOC`` with its first line numbered ``LINE``, so a
traceback points into the document. With ``--spark`` the block finds a ``spark``
session, as a notebook would provide one (``local_session()``: the connector jar when
it is built). A ``.start()`` in the docs leaves a streaming query running, which a reader
stops by hand; here, once the block has run, every active query is driven through the
data available (``processAllAvailable``, which raises the query's failure) and then
stopped.
"""

from __future__ import annotations

import sys
from typing import Any


def run(source: str, doc: str, line: int, *, spark: bool) -> None:
    """Execute ``source`` (optionally with a ``spark`` session) and settle its queries."""
    code = compile("\n" * (line - 1) + source, doc, "exec")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    if not spark:
        exec(code, namespace)
        return
    from datasource.session import local_session

    session = local_session("docs-example")
    session.sparkContext.setLogLevel("ERROR")
    namespace["spark"] = session
    try:
        exec(code, namespace)
        for query in session.streams.active:
            query.processAllAvailable()
            query.stop()
    finally:
        session.stop()


def main(argv: list[str]) -> int:
    """Entry point: ``DOC LINE [--spark]``, the block on stdin."""
    doc, line = argv[0], int(argv[1])
    run(sys.stdin.read(), doc, line, spark="--spark" in argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
