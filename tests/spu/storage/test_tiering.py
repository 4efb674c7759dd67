"""Tiering without servers: what a leader tiers next (pure), and a log's sealed segments
written to a tier directory, recorded in the manifest, read back, retried and expired."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_stream.errors import StorageError
from spark_stream.models.topic_schema import TopicSchema, storage_schema
from spark_stream.records import RECORD_SCHEMA, encode_batch
from spark_stream.tier import TierEntry, TierManifest, load_manifest, read_tier_batches
from spu.storage import LogSlice, ReplicaLog
from spu.storage.segment import SegmentInfo
from spu.tier_plan import Piece, pieces_to_tier, tier_status_text
from spu.tiering import tier_slices

from .helpers import TS0, fill


def seg(base: int, end: int, sealed: bool = True) -> SegmentInfo:
    return SegmentInfo(base, end, 100, sealed, 0, Path(f"{base}.log"))


LOG = [seg(0, 10), seg(10, 25), seg(25, 40), seg(40, 45, sealed=False)]


@pytest.mark.parametrize(
    ("tiered_end", "hw", "expected"),
    [
        (None, 45, [Piece(0, 10), Piece(10, 25), Piece(25, 40)]),  # never the active one
        (10, 45, [Piece(10, 25), Piece(25, 40)]),  # resumes at the manifest's end
        (17, 45, [Piece(17, 25), Piece(25, 40)]),  # a new leader's segments differ
        (40, 45, []),
        (None, 30, [Piece(0, 10), Piece(10, 25)]),  # only committed segments
        (None, 0, []),
        (50, 45, []),  # the tier is ahead (another replica's longer history)
    ],
)
def test_pieces_to_tier(tiered_end: int | None, hw: int, expected: list[Piece]) -> None:
    assert pieces_to_tier(LOG, tiered_end, hw) == expected


def test_status_text() -> None:
    assert tier_status_text(None, None, None, 0) == "ok: empty"
    assert tier_status_text(None, 0, 40, 3) == "ok: 3 files [0, 40)"
    assert tier_status_text("cannot write x: denied", 0, 40, 3) == "error: cannot write x: denied"


class Recorder:
    """A hook that records what it is told (the Delta table's seam)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, TierEntry]] = []

    def on_tiered(self, partition: int, entry: TierEntry) -> None:
        self.seen.append((partition, entry))


def slices(log: ReplicaLog, tiered_end: int | None) -> list[LogSlice]:
    pieces = pieces_to_tier(log.segments, tiered_end, log.hw)
    return [log.read(p.start, 1 << 30, end_offset=p.end) for p in pieces]


def test_a_deposed_leader_stops_tiering_at_once(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 40)
    log.hw = log.leo
    url = str(tmp_path / "tier" / "topic")
    hook = Recorder()
    pieces = slices(log, None)
    assert len(pieces) > 2
    # The leadership moves as soon as the first file is in the manifest.
    outcome = tier_slices(
        url,
        load_manifest(url, 3),
        pieces,
        RECORD_SCHEMA,
        hook,
        leads=lambda: not load_manifest(url, 3).files,
    )
    assert outcome.deposed and outcome.error is None
    assert outcome.written == 1
    assert [e.base_offset for e in load_manifest(url, 3).files] == [pieces[0].base_offset]
    assert hook.seen == []  # no commit once another SPU leads: it replays the manifest
    assert len(list((tmp_path / "tier" / "topic" / "partition=3").glob("*.parquet"))) == 1


def test_sealed_segments_become_parquet_files_in_the_manifest(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    expected = fill(log, 40)
    log.hw = log.leo
    url = str(tmp_path / "tier" / "topic")
    hook = Recorder()
    manifest = load_manifest(url, 3)
    outcome = tier_slices(url, manifest, slices(log, None), RECORD_SCHEMA, hook)
    assert outcome.error is None
    sealed = [s for s in log.segments if s.sealed]
    assert outcome.written == len(sealed) > 2
    stored = load_manifest(url, 3)
    assert stored == outcome.manifest
    assert [(e.base_offset, e.next_offset) for e in stored.files] == [
        (s.base_offset, s.next_offset) for s in sealed
    ]
    for e in stored.files:
        path = tmp_path / "tier" / "topic" / e.file
        assert path.parent.name == "partition=3"
        assert path.stat().st_size == e.bytes
        assert pq.read_table(path).column("offset").to_pylist() == list(
            range(e.base_offset, e.next_offset)
        )
        assert e.max_timestamp > 0
    assert [(p, e.base_offset) for p, e in hook.seen] == [(3, e.base_offset) for e in stored.files]
    # read back through the one tier reader: same offsets, same values
    end = stored.end_offset
    assert end is not None
    batches = list(read_tier_batches(url, stored, 7, end, RECORD_SCHEMA))
    got = {
        o: v
        for b in batches
        for o, v in zip(b.column("offset").to_pylist(), b.column("value").to_pylist(), strict=True)
    }
    assert got == {o: v for o, v in expected.items() if 7 <= o < end}
    assert batches[0].schema.names == ["offset", *RECORD_SCHEMA.names]


def test_a_repeat_after_a_crash_writes_the_same_file_once(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    """A crash after the file moved in but before the manifest recorded it: the retry
    rewrites the same name with the same content, and records it once."""
    log = open_log()
    fill(log, 40)
    log.hw = log.leo
    url = str(tmp_path / "t")
    first = slices(log, None)[:1]
    done = tier_slices(url, load_manifest(url, 0), first, RECORD_SCHEMA, None)
    # the crash: the file of the second piece is there, the manifest does not know it
    second = slices(log, done.manifest.end_offset)[:1]
    tier_slices(url, load_manifest(url, 0), second, RECORD_SCHEMA, None)
    (tmp_path / "t" / "_fluvio" / "partition=0.json").write_text(done.manifest.to_json())
    (tmp_path / "t" / "partition=0" / "junk.parquet.abc.tmp").write_bytes(b"half")
    hook = Recorder()
    again = tier_slices(
        url, load_manifest(url, 0), slices(log, done.manifest.end_offset), RECORD_SCHEMA, hook,
        replay=True,
    )  # fmt: skip
    assert again.error is None
    files = sorted(p.name for p in (tmp_path / "t" / "partition=0").glob("*.parquet"))
    manifest = load_manifest(url, 0)
    assert files == sorted(Path(e.file).name for e in manifest.files)
    bases = [e.base_offset for e in manifest.files]
    assert bases == sorted(set(bases))
    # the replay offers what was already recorded, then the new entries, each once
    assert [e.base_offset for _, e in hook.seen] == bases


def test_tier_retention_removes_old_files_and_entries(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 40)
    log.hw = log.leo
    url = str(tmp_path / "t")
    done = tier_slices(url, load_manifest(url, 0), slices(log, None), RECORD_SCHEMA, None)
    second = done.manifest.files[2]
    cutoff = second.max_timestamp  # the first two are older
    kept = tier_slices(url, done.manifest, [], RECORD_SCHEMA, None, cutoff_us=cutoff)
    assert kept.error is None
    assert load_manifest(url, 0).files == done.manifest.files[2:]
    left = sorted(p.name for p in (tmp_path / "t" / "partition=0").glob("*.parquet"))
    assert left == sorted(Path(e.file).name for e in done.manifest.files[2:])


def test_an_unwritable_tier_is_an_error_naming_the_url(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    log = open_log()
    fill(log, 40)
    log.hw = log.leo
    blocker = tmp_path / "file"
    blocker.write_text("a regular file: nothing can be created below it, even by root")
    url = str(blocker / "tier")
    with pytest.raises(StorageError, match=f"cannot read {url}/_fluvio/partition=0.json: "):
        load_manifest(url, 0)
    outcome = tier_slices(url, TierManifest(partition=0), slices(log, None), RECORD_SCHEMA, None)
    assert outcome.error is not None
    assert outcome.error.startswith(f"cannot write {url}/partition=0/")
    assert outcome.written == 0 and outcome.manifest.files == ()
    again = tier_slices(url, TierManifest(partition=0), slices(log, None), RECORD_SCHEMA, None)
    assert again.error == outcome.error  # the same text each try: logged once


def test_a_typed_topic_tiers_its_columns_and_old_files_widen(
    open_log: Callable[..., ReplicaLog], tmp_path: Path
) -> None:
    """Frames of schema version 1, tiered; read back after version 2 added a column: the
    old files read it as null."""
    v1 = TopicSchema.of(
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("city", pa.string())])
    )
    v2 = v1.evolve(pa.schema([*v1.arrow_schema, ("zip", pa.string())]))
    storage = storage_schema(v1.user_schema())
    log = open_log()
    for n in range(30):
        rows = {
            "id": pa.array([n * 10 + i for i in range(10)], pa.int64()),
            "city": pa.array([f"c{n}-{i}" for i in range(10)]),
            "key": pa.nulls(10, pa.binary()),
            "timestamp": pa.array([TS0 + n] * 10, pa.timestamp("us", tz="UTC")),
            "headers": pa.nulls(10, storage.field("headers").type),
        }
        batch = pa.RecordBatch.from_pydict(rows, schema=storage)
        log.append_produced(encode_batch(batch, schema_version=1))
    log.hw = log.leo
    url = str(tmp_path / "typed")
    done = tier_slices(url, TierManifest(partition=0), slices(log, None), storage, None)
    assert done.error is None and done.manifest.end_offset
    end = done.manifest.end_offset
    newer = storage_schema(v2.user_schema())
    batches = list(read_tier_batches(url, done.manifest, 0, end, newer))
    table = pa.Table.from_batches(batches)
    assert table.schema.names == ["offset", "id", "city", "zip", "key", "timestamp", "headers"]
    assert table.column("id").to_pylist() == list(range(end))
    assert table.column("zip").null_count == end
