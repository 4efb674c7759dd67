"""The checked-in shared test vectors equal what the Python code produces now.

The Java connector's JUnit tests decode and encode these files byte for byte, so a
Python change to the batch frame, the protocol frame, the meta encoding, the key hash,
the producer ids or the error codes must come with regenerated vectors (and then the
Java side must follow): ``python -m tests.vectors.generate``.
"""

from __future__ import annotations

import json

import pytest

from tests.vectors.generate import DATA_DIR, generate

_REGENERATE = "run `python -m tests.vectors.generate` and make the Java side match"


@pytest.mark.parametrize("name", sorted(generate()))
def test_checked_in_vectors_match_the_python_code(name: str) -> None:
    path = DATA_DIR / name
    assert path.is_file(), f"{path} is missing: {_REGENERATE}"
    assert path.read_text(encoding="utf-8") == generate()[name], (
        f"{name} no longer matches the Python code: {_REGENERATE}"
    )


def test_no_stale_vector_files() -> None:
    on_disk = {p.name for p in DATA_DIR.iterdir()}
    assert on_disk == set(generate()), f"unexpected files in {DATA_DIR}: {_REGENERATE}"


def test_vectors_cover_every_compression_and_damage() -> None:
    frames = json.loads(generate()["batch_frames.json"])
    assert [f["compression"] for f in frames["frames"]] == ["none", "lz4", "zstd"]
    assert all(c["error"].startswith("CorruptFrameError: ") for c in frames["corrupt"])
