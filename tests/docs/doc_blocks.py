"""The fenced code blocks of a Markdown document, with the markers that say how to run them.

A block runs by its language: ``bash``/``sh``/``shell`` under bash, ``python`` in a
fresh interpreter, and a ``python`` block that uses ``spark`` without making one with a
Spark session provided (as in a notebook). Any other block (a diagram, a table of
output, a ``console`` transcript) must say why it does not run. Markers are HTML
comments (invisible once rendered) on the lines right above the opening fence::

    <!-- example: skip a directory listing, not code -->
    <!-- example: expect-lines [u1] hello | [u2] world -->

``skip REASON`` keeps a block from running (the reason is required); ``expect-lines``
names lines (``|``-separated) the block's output must contain, each as a whole line.
Pure: text in, blocks and problems out; running them is ``test_examples.py``'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Block", "read_blocks", "problems", "BASH", "PYTHON", "SPARK"]

BASH, PYTHON, SPARK = "bash", "python", "spark"
_SHELLS = {"bash", "sh", "shell"}
_FENCE = re.compile(r"^(```+)\s*([\w+-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*example:\s*(\S+)\s*(.*?)\s*-->\s*$")
_DIRECTIVES = {"skip", "expect-lines"}
_USES_SPARK = re.compile(r"\bspark\.")
_MAKES_SPARK = re.compile(r"^\s*spark\s*=", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block.

    Attributes:
        doc: the document's name, for messages (``docs/user-guide.md``).
        line: the 1-based line of the block's first line of code.
        lang: the fence's info string (``bash``, ``python``, ``""``...).
        text: the code.
        skip: the skip marker's reason, or None.
        expect: lines the output must contain.
        markers: the raw markers above the block (directive, argument).
    """

    doc: str
    line: int
    lang: str
    text: str
    skip: str | None = None
    expect: tuple[str, ...] = ()
    markers: tuple[tuple[str, str], ...] = ()

    @property
    def runner(self) -> str | None:
        """``bash``, ``python`` or ``spark``: how the block runs; None when nothing can."""
        if self.lang in _SHELLS:
            return BASH
        if self.lang == "python":
            uses = _USES_SPARK.search(self.text) and not _MAKES_SPARK.search(self.text)
            return SPARK if uses else PYTHON
        return None

    @property
    def runs(self) -> bool:
        """True when the test runs the block: it has a runner and no skip marker."""
        return self.runner is not None and self.skip is None

    @property
    def where(self) -> str:
        """``doc:line`` of the block, for messages."""
        return f"{self.doc}:{self.line}"


def read_blocks(markdown: str, doc: str) -> tuple[list[Block], list[str]]:
    """The fenced blocks of ``markdown`` and the markers attached to no block.

    Returns:
        The blocks in document order, and ``doc:line`` messages for stray markers (a
        marker must sit on the lines right above an opening fence).
    """
    lines = markdown.splitlines()
    blocks: list[Block] = []
    stray: list[str] = []
    pending: list[tuple[int, str, str]] = []  # markers seen right above the current line
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = _MARKER.match(line)
        fence = _FENCE.match(line)
        if marker:
            pending.append((i + 1, marker.group(1), marker.group(2)))
        elif fence:
            end = i + 1
            while end < len(lines) and lines[end].strip() != fence.group(1):
                end += 1
            blocks.append(_block(doc, i + 2, fence.group(2), lines[i + 1 : end], pending))
            pending = []
            i = end
        else:
            stray += [f"{doc}:{n}: marker attached to no code block" for n, _, _ in pending]
            pending = []
        i += 1
    stray += [f"{doc}:{n}: marker attached to no code block" for n, _, _ in pending]
    return blocks, stray


def _block(
    doc: str, line: int, lang: str, body: list[str], markers: list[tuple[int, str, str]]
) -> Block:
    skip = next((arg for _, name, arg in markers if name == "skip" and arg), None)
    expect = tuple(
        part.strip()
        for _, name, arg in markers
        if name == "expect-lines"
        for part in arg.split("|")
        if part.strip()
    )
    raw = tuple((name, arg) for _, name, arg in markers)
    text = "\n".join(body) + "\n"
    return Block(doc, line, lang, text, skip=skip, expect=expect, markers=raw)


def problems(blocks: list[Block]) -> list[str]:
    """What keeps each block from being either run or skipped for a stated reason."""
    found: list[str] = []
    for block in blocks:
        for name, arg in block.markers:
            if name not in _DIRECTIVES:
                found.append(f"{block.where}: unknown marker 'example: {name}'")
            elif not arg:
                found.append(f"{block.where}: 'example: {name}' needs an argument (a reason)")
        if block.runner is None and block.skip is None:
            found.append(
                f"{block.where}: a ```{block.lang} block has no runner: make it bash or "
                "python, or mark it <!-- example: skip REASON -->"
            )
        if block.skip is not None and block.expect:
            found.append(f"{block.where}: a skipped block expects output")
    return found
