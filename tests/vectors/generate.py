"""Shared test vectors: what the Python code writes, for the Java connector to match.

The Java client (``connector/``) re-implements the batch frame, the protocol frame and
its msgpack meta, the key hash and the derived producer ids. Its JUnit tests read the
files this script writes into ``tests/vectors/data`` and must decode (and, where it
encodes, produce) the very same bytes; ``tests/vectors/test_vectors.py`` checks that the
checked-in files still equal what the Python code produces now, so a Python change that
would break the Java side fails the Python suite first.

Run ``python -m tests.vectors.generate`` (from the repository root) after such a change,
and commit the files. The output is deterministic: fixed records, timestamps and ids.

Each file's cases are built in a module of their own (``batch_cases``, ``protocol_cases``,
``number_cases``, ``reader_cases``, ``writer_cases``, ``typed_cases``, ``tier_cases``);
this module gathers them and writes the files.

JSON conventions: bytes are lowercase hex strings; in a protocol frame's ``meta`` a
msgpack bin value is ``{"$bytes": hex}`` and a msgpack timestamp is
``{"$timestamp_us": int}``, so the Java side knows which msgpack type each value is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.vectors.batch_cases import batch_frames
from tests.vectors.number_cases import error_codes, key_hashes, producer_ids
from tests.vectors.protocol_cases import protocol_frames
from tests.vectors.reader_cases import reader_options
from tests.vectors.tier_cases import tier_file, tier_manifests, tier_nested_file, tier_typed_file
from tests.vectors.typed_cases import typed_frames
from tests.vectors.writer_cases import writer_options

__all__ = ["DATA_DIR", "generate", "write"]

DATA_DIR = Path(__file__).resolve().parent / "data"


def generate() -> dict[str, str]:
    """Every vector file: name -> JSON text (keys in insertion order, which is the
    msgpack order of a meta map; one trailing newline)."""
    files = {
        "batch_frames.json": batch_frames(),
        "protocol_frames.json": protocol_frames(),
        "key_hashes.json": key_hashes(),
        "producer_ids.json": producer_ids(),
        "error_codes.json": error_codes(),
        "reader_options.json": reader_options(),
        "writer_options.json": writer_options(),
        "typed_frames.json": typed_frames(),
        "tier_manifests.json": tier_manifests(),
        "tier_file.json": tier_file(),
        "tier_typed_file.json": tier_typed_file(),
        "tier_nested_file.json": tier_nested_file(),
    }
    return {name: json.dumps(body, indent=1) + "\n" for name, body in files.items()}


def write(data_dir: Path = DATA_DIR) -> list[Path]:
    """Write every vector file into ``data_dir``; returns the paths written."""
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in generate().items():
        path = data_dir / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA_DIR):
        print(written)
