"""``--table delta`` in a whole cluster (real SC and SPU apps, real sockets): each sealed
segment goes to a Parquet file, the manifest, then the Delta table; a new leader's replay
adds nothing twice; files leaving the tier leave the table first."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from spark_stream.tier import load_manifest
from spu.storage.delta_plan import app_id
from tests.spu.cluster_inproc import InProcessCluster
from tests.spu.helpers import produce, run, until
from tests.spu.storage.helpers import commit_adds
from tests.spu.test_tiering_cluster import FAST, produce_many, tiered_spec


def listed_upto(tier: Path, version: int | None) -> list[str]:
    """The manifest's files up to the committed version (tiering may be a file ahead)."""
    files = load_manifest(str(tier), 0).files
    return sorted(e.file for e in files if version is not None and e.base_offset <= version)


def delta_state(tier: Path) -> tuple[int | None, list[str]]:
    """The partition's committed version and the table's files (none before the table)."""
    if not (tier / "_delta_log").is_dir():
        return None, []
    table = DeltaTable(str(tier))
    paths = pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()
    return table.transaction_version(app_id(0)), sorted(paths)


def test_sealed_segments_reach_the_delta_table_once(tmp_path: Path) -> None:
    async def body() -> None:
        tier = tmp_path / "tier" / "sales"
        async with InProcessCluster(tmp_path, [1, 2], **FAST) as cluster:
            spec = tiered_spec(tier, table="delta", replicaAssignment=[
                {"partition": 0, "replicas": [1, 2]}
            ])  # fmt: skip
            del spec["partitions"], spec["replicationFactor"]
            await cluster.create_topic("sales", **spec)
            sent = await produce_many(cluster, 1, "sales", 12)

            def caught_up() -> bool:
                manifest = load_manifest(str(tier), 0)
                last = manifest.files[-1].base_offset if manifest.files else None
                return last is not None and last >= 40 and delta_state(tier)[0] == last

            await until(caught_up, within=60, what="the Delta table holds every tiered file")
            table = DeltaTable(str(tier))  # one snapshot: its version, files and rows
            version = table.transaction_version(app_id(0))
            paths = sorted(pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())
            assert paths == listed_upto(tier, version)
            rows = table.to_pyarrow_table().sort_by("offset")
            ends = [
                e.next_offset for e in load_manifest(str(tier), 0).files if e.base_offset == version
            ]
            end = ends[0]
            assert rows.column("offset").to_pylist() == list(range(end))
            assert [v.decode() for v in rows.column("value").to_pylist()] == sent[:end]
            assert set(rows.column("partition").to_pylist()) == {0}

            # A new leader replays the manifest through the hook, then tiers on.
            await cluster.stop_spu(1)
            await until(
                lambda: cluster.spus[2].dispatcher.leader("sales-0") is not None,
                within=60,
                what="SPU 2 leads",
            )
            conn = await cluster.conn(2)
            for n in range(8):
                await produce(conn, "sales", 0, [f"later-{n}-{i}" for i in range(5)])
            await until(
                lambda: (
                    (load_manifest(str(tier), 0).end_offset or 0) >= len(sent) + 20 and caught_up()
                ),
                within=60,
                what="the new leader commits on",
            )
            table = DeltaTable(str(tier))  # one snapshot; tiering may go on meanwhile
            after = sorted(pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())
            assert after == listed_upto(tier, table.transaction_version(app_id(0)))
            assert len(after) == len(set(after))
            adds = [path for added in commit_adds(tier, table.version()) for path in added]
            assert len(adds) == len(after)  # each file added once: the replay added none

    run(body, timeout=180)


def test_files_leave_the_table_before_the_tier_retention_deletes_them(tmp_path: Path) -> None:
    async def body() -> None:
        tier = tmp_path / "tier" / "short"
        async with InProcessCluster(tmp_path, [1], **FAST) as cluster:
            await cluster.create_topic("short", **tiered_spec(tier, table="delta", retentionSecs=2))
            await produce_many(cluster, 1, "short", 10)

            def expired() -> bool:
                manifest = load_manifest(str(tier), 0)
                return bool(manifest.files) is False and delta_state(tier)[0] is not None

            await until(expired, within=60, what="tier retention empties the tier")
            table = DeltaTable(str(tier))
            assert table.to_pyarrow_table().num_rows == 0  # nothing dangling to read
            assert pa.table(table.get_add_actions(flatten=True)).num_rows == 0
            assert not list((tier / "partition=0").glob("*.parquet"))
            assert any(h["operation"] == "WRITE" for h in table.history())

    run(body, timeout=180)


def test_a_typed_topic_table_has_its_columns_and_evolves(tmp_path: Path) -> None:
    from spark_stream.client.fluvio import FluvioAsync
    from spark_stream.models.topic_schema import TopicSchema
    from tests.spu.cluster_inproc import HOST

    v1 = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("city", pa.string())])
    v2 = pa.schema([*v1, pa.field("zip", pa.string())])

    async def body() -> None:
        tier = tmp_path / "tier" / "cities"
        async with InProcessCluster(tmp_path, [1], **FAST) as cluster:
            spec = tiered_spec(tier, table="delta", topicSchema=TopicSchema.of(v1).to_dict())
            await cluster.create_topic("cities", **spec)
            assert cluster.sc is not None and cluster.admin is not None
            endpoint = f"{HOST}:{cluster.sc.public_port}"

            async def send(schema: pa.Schema, first: int, last: int) -> None:
                client = await FluvioAsync.connect(endpoint)  # fresh metadata: the schema
                try:
                    producer = await client.topic_producer("cities", linger_ms=0)
                    for n in range(first, last):
                        rows: dict[str, list[object]] = {
                            "id": [n * 2, n * 2 + 1],
                            "city": [f"c{n}", None],
                        }
                        if "zip" in schema.names:
                            rows["zip"] = ["z", None]
                        await (await producer.send_batch(pa.table(rows, schema=schema)))
                    await producer.close()
                finally:
                    await client.close()

            await send(v1, 0, 6)
            # The table is made of version 1 files before the schema changes (later,
            # tiering writes every file with the latest columns).
            await until(
                lambda: delta_state(tier)[0] is not None, within=60, what="the first commit"
            )
            await cluster.admin.update_topic_schema("cities", v2)
            await send(v2, 6, 12)

            def has_zip() -> bool:
                version, _ = delta_state(tier)
                if version is None:
                    return False
                table = DeltaTable(str(tier))
                names = pa.schema(table.schema().to_arrow()).names
                return "zip" in names and table.to_pyarrow_table().num_rows >= 20

            await until(has_zip, within=60, what="the evolved files in the table")
            table = DeltaTable(str(tier))
            names = pa.schema(table.schema().to_arrow()).names
            assert names[:3] == ["offset", "id", "city"]
            assert {"key", "timestamp", "headers", "partition", "zip"} <= set(names)
            rows = table.to_pyarrow_table().sort_by("offset").to_pydict()
            assert rows["id"] == list(range(len(rows["id"])))
            assert all(z is None for i, z in zip(rows["id"], rows["zip"], strict=True) if i < 12)
            assert "z" in rows["zip"]
            assert "ADD COLUMN" in [h["operation"] for h in table.history()]

    run(body, timeout=180)
