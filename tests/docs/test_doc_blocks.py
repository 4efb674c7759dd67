"""The block reader: fences, languages, markers, and what it reports as unrunnable."""

from __future__ import annotations

from tests.docs.doc_blocks import BASH, PYTHON, SPARK, problems, read_blocks

PAGE = """# Title

```bash
fluvio topic list
```

<!-- example: skip a directory listing, not code -->
```
spark_stream/   the core
```

<!-- example: expect-lines [u1] hello | [u2] world -->
```python
print("[u1] hello")
```

```python
df = spark.read.format("fluvio").load()
```

```python
from datasource.session import local_session
spark = local_session()
```
"""


def test_blocks_their_lines_languages_and_runners() -> None:
    blocks, stray = read_blocks(PAGE, "page.md")
    assert stray == []
    assert [(b.line, b.lang, b.runner, b.runs) for b in blocks] == [
        (4, "bash", BASH, True),
        (9, "", None, False),
        (14, "python", PYTHON, True),
        (18, "python", SPARK, True),  # uses spark without making one
        (22, "python", PYTHON, True),  # makes its own
    ]
    assert blocks[0].text == "fluvio topic list\n"
    assert blocks[1].skip == "a directory listing, not code"
    assert blocks[2].expect == ("[u1] hello", "[u2] world")
    assert problems(blocks) == []


def test_a_block_nothing_runs_needs_a_skip_reason() -> None:
    blocks, _ = read_blocks("```text\na table\n```\n\n```console\n$ fluvio\n```\n", "p.md")
    assert [p.split(":", 2)[1] for p in problems(blocks)] == ["2", "6"]
    assert "no runner" in problems(blocks)[0]


def test_bad_markers_are_reported() -> None:
    page = (
        "<!-- example: skip -->\n```\nx\n```\n"  # no reason
        "<!-- example: run fast -->\n```bash\ntrue\n```\n"  # unknown directive
        "<!-- example: skip why -->\n\n```bash\ntrue\n```\n"  # a blank line detaches it
        "<!-- example: skip why -->\n<!-- example: expect-lines x -->\n```bash\ntrue\n```\n"
    )
    blocks, stray = read_blocks(page, "p.md")
    assert stray == ["p.md:9: marker attached to no code block"]
    assert problems(blocks) == [
        "p.md:3: 'example: skip' needs an argument (a reason)",
        "p.md:3: a ``` block has no runner: make it bash or python, "
        "or mark it <!-- example: skip REASON -->",
        "p.md:7: unknown marker 'example: run'",
        "p.md:17: a skipped block expects output",
    ]
