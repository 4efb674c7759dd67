"""Helpers for the storage tests: sample frames and the values they hold."""

from __future__ import annotations

import json
from pathlib import Path

from spark_stream.records import encode_records
from spu.storage import ReplicaLog

TS0 = 1_700_000_000_000_000


def values_for(tag: int, count: int, size: int = 0) -> list[bytes]:
    """Deterministic, distinguishable record values for batch ``tag``."""
    return [f"b{tag}-r{i}-".encode().ljust(size, b"x") for i in range(count)]


def make_frame(
    tag: int, count: int, *, ts: int | None = None, size: int = 0, base_offset: int = 0
) -> bytes:
    """One batch frame of ``count`` records; timestamps ``ts + i`` (default by tag)."""
    start = TS0 + tag * 1000 if ts is None else ts
    return encode_records(
        values_for(tag, count, size),
        timestamps=[start + i for i in range(count)],
        base_offset=base_offset,
    )


def read_values(
    log: ReplicaLog,
    start: int | None = None,
    end: int | None = None,
) -> dict[int, bytes]:
    """Every record value in ``[start, end)`` by offset, through ``read`` slices."""
    offset = log.log_start_offset if start is None else start
    end = log.leo if end is None else end
    out: dict[int, bytes] = {}
    while offset < end:
        piece = log.read(offset, 64 * 1024, end_offset=end)
        assert piece.length > 0, f"no progress at offset {offset}"
        for batch in piece.decode(with_offsets=True):
            for o, v in zip(
                batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True
            ):
                if offset <= o < end:
                    out[o] = v
        offset = piece.next_offset
    return out


def fill(
    log: ReplicaLog, batches: int, *, per_batch: int = 5, size: int = 0, first_tag: int = 0
) -> dict[int, bytes]:
    """Append ``batches`` produced batches; return the values by offset."""
    expected: dict[int, bytes] = {}
    for tag in range(first_tag, first_tag + batches):
        values = values_for(tag, per_batch, size)
        (base,) = log.append_produced(make_frame(tag, per_batch, size=size))
        expected.update({base + i: v for i, v in enumerate(values)})
    return expected


def commit_adds(table_dir: Path, version: int) -> list[list[str]]:
    """The paths each commit of the Delta table at ``table_dir`` added, versions 0 to
    ``version``, read from the log itself.

    Not ``DeltaTable.history()``: deltalake 1.6 lists every commit in storage but numbers
    them down from the *loaded* snapshot's version, so on a table someone commits to
    meanwhile, newer commits pass for older ones (a flaky count of commits per file).
    """
    log = table_dir / "_delta_log"
    commits: list[list[str]] = []
    for v in range(version + 1):
        lines = (log / f"{v:020d}.json").read_text().splitlines()
        actions = [json.loads(line) for line in lines if line.strip()]
        commits.append([a["add"]["path"] for a in actions if "add" in a])
    return commits
