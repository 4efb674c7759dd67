"""Every code block of README.md and docs/*.md runs as written, or says why it cannot.

The blocks of one document run in order in one environment, as a reader following the
page would run them: a temporary HOME (so ``~/.fluvio`` and the profile are fresh), a
temporary working directory, ``fluvio`` on ``PATH`` (a shim for
``python -m spark_stream.cli`` of this checkout) and this interpreter as ``python``.
bash blocks run under ``bash -e -o pipefail``; python blocks each in a fresh interpreter
(``block_runner``), Spark ones with a ``spark`` session. A block must exit 0 and print
the lines its ``expect-lines`` marker names (``doc_blocks`` describes the markers). The
first block of a document fails the test; later ones do not run.

One preparation is not the reader's: the first ``fluvio cluster start`` would take port
9003, which a cluster outside the test may hold, so the home starts with the layout file
a previous start leaves (``~/.fluvio/cluster.json``) naming a free SC port. Whatever
cluster a document started is stopped at the end through its pid files.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from spark_stream.local.cluster import LocalCluster
from spark_stream.local.redis_server import free_port
from tests.docs.doc_blocks import BASH, PYTHON, SPARK, Block, problems, read_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Bounds on one block, so a hanging example fails instead of hanging the suite (a Spark
# block starts a JVM: generous on a loaded 2-core machine).
_TIMEOUT_S = {BASH: 120.0, PYTHON: 90.0, SPARK: 300.0}
_TAIL = 40  # output lines quoted in a failure


def doc_blocks(path: Path) -> tuple[list[Block], list[str]]:
    """The blocks of one document (named relative to the checkout) and its stray markers."""
    return read_blocks(path.read_text(), str(path.relative_to(ROOT)))


def _params() -> list[object]:
    params: list[object] = []
    for path in DOCS:
        blocks = [b for b in doc_blocks(path)[0] if b.runs]
        if not blocks:
            continue
        marks = [pytest.mark.integration]
        if any(b.runner == SPARK for b in blocks):
            marks.append(pytest.mark.spark)
        params.append(pytest.param(path, marks=marks, id=str(path.relative_to(ROOT))))
    return params


# -- what the docs hold ------------------------------------------------------------------


def test_every_block_has_a_runner_or_a_reason_to_skip() -> None:
    found: list[str] = []
    total = 0
    for path in DOCS:
        blocks, stray = doc_blocks(path)
        total += len(blocks)
        found += stray + problems(blocks)
    assert total > 10  # the documents were read
    assert found == [], "\n".join(found)


# -- running them ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reader:
    """The environment a document's blocks run in."""

    home: Path
    work: Path
    env: dict[str, str]


@pytest.fixture
def reader(tmp_path: Path) -> Iterator[Reader]:
    """A fresh reader's machine; the cluster its document starts is stopped at the end."""
    home, work, bin_dir = tmp_path / "home", tmp_path / "work", tmp_path / "bin"
    for folder in (home / ".fluvio", work, bin_dir):
        folder.mkdir(parents=True)
    shim = bin_dir / "fluvio"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m spark_stream.cli "$@"\n')
    shim.chmod(0o755)
    (home / ".fluvio" / "cluster.json").write_text(json.dumps({"sc_public_port": free_port()}))
    # The reader's settings, not the suite's: no profile, endpoint or SPU tuning leaks in.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FLUVIO_", "PYSPARK_")) or k == "FLUVIO_JARS_DIR"
    }
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(HOME=str(home), PATH=path, PYTHONPATH=str(ROOT))
    try:
        yield Reader(home, work, env)
    finally:
        LocalCluster(home / ".fluvio").stop()


def run_block(block: Block, reader: Reader) -> subprocess.CompletedProcess[str]:
    """Run one block in the reader's environment, bounded in time."""
    if block.runner == BASH:
        argv = ["bash", "-e", "-x", "-o", "pipefail"]
    else:
        argv = [sys.executable, "-m", "tests.docs.block_runner", block.doc, str(block.line)]
        if block.runner == SPARK:
            argv.append("--spark")
    # Its own session, so a timeout kills the block's whole process group (the cluster's
    # processes detach into sessions of their own and are left to the fixture).
    proc = subprocess.Popen(
        argv,
        cwd=reader.work,
        env=reader.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    timeout = _TIMEOUT_S[block.runner or BASH]
    try:
        out, err = proc.communicate(block.text, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n(killed: still running after {timeout:.0f}s)"
        return subprocess.CompletedProcess(argv, -signal.SIGKILL, out, err)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _tail(text: str) -> str:
    return "\n".join(text.rstrip().splitlines()[-_TAIL:])


def failure(block: Block, done: subprocess.CompletedProcess[str]) -> str | None:
    """Why the run of ``block`` failed (exit status, missing output lines), or None."""
    printed = {line.strip() for line in done.stdout.splitlines()}
    missing = [line for line in block.expect if line not in printed]
    if done.returncode == 0 and not missing:
        return None
    why = f"exited {done.returncode}" if done.returncode else f"did not print {missing}"
    return (
        f"{block.where} ({block.runner} block) {why}\n{block.text}"
        f"--- stdout\n{_tail(done.stdout)}\n--- stderr\n{_tail(done.stderr)}"
    )


@pytest.mark.parametrize("path", _params())
def test_the_examples_of_a_document_run(path: Path, reader: Reader) -> None:
    blocks = [b for b in doc_blocks(path)[0] if b.runs]
    for block in blocks:
        why = failure(block, run_block(block, reader))
        if why is not None:
            pytest.fail(why, pytrace=False)
