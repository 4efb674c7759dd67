"""``fluvio topic ...``, ``fluvio partition list``, ``fluvio cluster spu|spg ...``.

Each handler takes the parsed arguments and a connected ``Fluvio``, calls the admin
API, and prints rows through ``output.emit``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from spark_stream.cli.output import emit
from spark_stream.cli.parsing import load_assignment, parse_bytes, parse_duration, tier_url
from spark_stream.client import Fluvio
from spark_stream.errors import InvalidConfigError
from spark_stream.models import Partition, Spu, SpuGroup, Topic
from spark_stream.models.topic_schema import TopicSchema, schema_from_file
from spark_stream.net.endpoint import Endpoint, parse_endpoint
from spark_stream.spu_identity import SECRET_FILE, new_secret, read_secret_file, write_secret_file
from spark_stream.units import format_size

__all__ = [
    "topic_spec",
    "topic_create",
    "topic_list",
    "topic_describe",
    "topic_delete",
    "topic_add_partition",
    "partition_list",
    "partition_elect_preferred",
    "partition_lags",
    "spu_register",
    "spu_unregister",
    "spu_list",
    "spg_create",
    "spg_delete",
    "spg_list",
    "topic_row",
    "topic_update_schema",
    "partition_row",
    "spu_row",
    "spg_row",
]

TOPIC_COLUMNS = (
    "name",
    "partitions",
    "replication",
    "retention_secs",
    "local_retention_secs",
    "tier",
    "segment_size",
    "compression",
    "schema",
    "table",
    "status",
    "reason",
)
PARTITION_COLUMNS = (
    "topic",
    "partition",
    "leader",
    "leader_epoch",
    "replicas",
    "resolution",
    "size",
    "log-start",
    "leo",
    "hw",
    "lrs",
    "tier",
    "repair",
)
PARTITION_LIST_COLUMNS = (*PARTITION_COLUMNS, "lag")
SPU_COLUMNS = ("id", "name", "status", "type", "rack", "public", "private")
SPG_COLUMNS = ("name", "status", "replicas", "min_id", "rack", "size", "reason")


def topic_row(topic: Topic) -> dict[str, Any]:
    """One ``topic list`` row."""
    spec = topic.spec
    return {
        "name": topic.name,
        "partitions": spec.partitions,
        "replication": spec.replication_factor,
        "retention_secs": spec.retention_secs,
        "local_retention_secs": spec.local_retention_secs,
        "tier": spec.tier,
        "segment_size": spec.segment_size,
        "compression": spec.compression.value,
        "schema": _schema_cell(spec.topic_schema),
        "table": None if spec.table is None else spec.table.value,
        "status": topic.status.resolution.value,
        "reason": topic.status.reason,
    }


def _schema_cell(schema: TopicSchema | None) -> str | None:
    """``v2: id int64!, name string`` (``!``: not null), or None for an untyped topic."""
    if schema is None:
        return None
    columns = ", ".join(f"{c.name} {c.type}{'' if c.nullable else '!'}" for c in schema.columns)
    return f"v{schema.version}: {columns}"


def partition_row(part: Partition, *, human: bool = False) -> dict[str, Any]:
    """One ``partition list`` row (LRS as ``spu:leo/hw``, ``*`` when out of sync, ``!``
    when damaged (a frame failed its crc, not repaired yet); the
    leader epoch counts the partition's elections). ``size`` is the leader's log in bytes
    (``human``: as ``1.5 KiB``, for tables); it and ``log-start`` are None until the
    leader reports. ``tier``: the leader's tiering state, ``ok: N files [a, b)`` or
    ``error: <cause>``. ``repair``: per replica that was damaged, ``spu: what happened``
    (``damaged: ...``, ``repairing from offset N``, ``repaired from offset N``)."""
    status = part.status
    size: int | str | None = None if status.size < 0 else status.size
    if human and isinstance(size, int):
        size = format_size(size)
    lrs = [
        f"{r.spu_id}:{r.leo}/{r.hw}" + ("" if r.in_sync else "*") + ("!" if r.damaged else "")
        for r in status.lrs
    ]
    repairs = [f"{r.spu_id}: {r.repair}" for r in status.lrs if r.repair is not None]
    return {
        "topic": part.topic,
        "partition": part.index,
        "leader": status.leader,
        "leader_epoch": status.leader_epoch,
        "replicas": list(part.spec.replicas),
        "resolution": status.resolution.value,
        "size": size,
        "log-start": None if status.log_start_offset < 0 else status.log_start_offset,
        "leo": status.leo,
        "hw": status.hw,
        "lrs": lrs,
        "tier": status.tier,
        "repair": repairs or None,
    }


def spu_row(spu: Spu) -> dict[str, Any]:
    """One ``cluster spu list`` row."""
    pub, priv = spu.spec.public_endpoint, spu.spec.private_endpoint
    return {
        "id": spu.spu_id,
        "name": spu.name,
        "status": spu.status.resolution.value,
        "type": spu.spec.spu_type.value,
        "rack": spu.spec.rack,
        "public": str(Endpoint(pub.host, pub.port)),
        "private": str(Endpoint(priv.host, priv.port)),
    }


def spg_row(group: SpuGroup) -> dict[str, Any]:
    """One ``cluster spg list`` row."""
    spec = group.spec
    return {
        "name": group.name,
        "status": group.status.resolution.value,
        "replicas": spec.replicas,
        "min_id": spec.min_id,
        "rack": spec.template.rack,
        "size": spec.template.storage.size,
        "reason": group.status.reason,
    }


def topic_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The topic spec ``topic create``'s flags ask for; every flag given is used.

    Raises:
        InvalidConfigError: a bad value, or ``-p``/``-r`` next to ``-f``.
    """
    spec: dict[str, Any] = {}
    if args.replica_assignment is not None:
        given = [
            flag
            for flag, value in (("-p", args.partitions), ("-r", args.replication))
            if value is not None
        ]
        if given:  # the file sets both; a second source would be silently overruled
            raise InvalidConfigError(
                f"topic create: {' and '.join(given)} cannot be combined with -f "
                "(the assignment file sets the partitions and the replication)"
            )
        spec["replica_assignment"] = load_assignment(args.replica_assignment)
    else:
        spec["partitions"] = 1 if args.partitions is None else args.partitions
        spec["replication_factor"] = 1 if args.replication is None else args.replication
    if args.retention_time is not None:
        spec["retention_secs"] = parse_duration(args.retention_time, "--retention-time")
    if getattr(args, "local_retention", None) is not None:
        spec["local_retention_secs"] = parse_duration(args.local_retention, "--local-retention")
    if getattr(args, "tier", None) is not None:
        spec["tier"] = tier_url(args.tier)
    if args.segment_size is not None:
        spec["segment_size"] = parse_bytes(args.segment_size, "--segment-size")
    if args.max_partition_size is not None:
        spec["max_partition_size"] = parse_bytes(args.max_partition_size, "--max-partition-size")
    if args.compression_type is not None:
        spec["compression"] = args.compression_type
    if args.min_in_sync_replicas is not None:
        spec["min_in_sync_replicas"] = args.min_in_sync_replicas
    if args.ignore_rack_assignment:
        spec["ignore_rack_assignment"] = True
    if getattr(args, "schema", None) is not None:
        spec["topic_schema"] = TopicSchema.of(schema_from_file(args.schema)).to_dict()
    if getattr(args, "table", None) is not None:
        spec["table"] = args.table
    return spec


def topic_create(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Create a topic from the flags (or a manual assignment file)."""
    topic = fluvio.admin().create_topic(
        args.name,
        topic_spec(args),
        dry_run=args.dry_run,
        allow_missing_spus=args.allow_missing_spus,
    )
    verb = "validated" if args.dry_run else "created"
    print(f'topic "{topic.name}" {verb}')
    return 0


def topic_update_schema(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Evolve a typed topic's schema (only nullable columns appended)."""
    topic = fluvio.admin().update_topic_schema(args.name, schema_from_file(args.schema))
    schema = topic.spec.topic_schema
    version = schema.version if schema is not None else "?"
    print(f'topic "{topic.name}" schema updated to version {version}')
    return 0


def topic_list(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """List topics."""
    rows = [topic_row(t) for t in fluvio.admin().list_topics()]
    emit(rows, args.output, columns=TOPIC_COLUMNS)
    return 0


def topic_describe(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """One topic: its spec, status and partitions."""
    topic, parts = fluvio.admin().describe_topic(args.name)
    if args.output == "table":
        emit([topic_row(topic)], "table", columns=TOPIC_COLUMNS)
        print()
        emit([partition_row(p, human=True) for p in parts], "table", columns=PARTITION_COLUMNS)
    else:
        data = topic.to_dict() | {"partitions_status": [partition_row(p) for p in parts]}
        emit(data, args.output)
    return 0


def topic_delete(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Delete topics."""
    for name in args.names:
        fluvio.admin().delete_topic(name)
        print(f'topic "{name}" deleted')
    return 0


def topic_add_partition(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Add ``--count`` partitions to a topic; print each new one with its leader SPU."""
    topic = fluvio.admin().add_partitions(args.name, args.count)
    first_new = topic.spec.partitions - args.count
    rows = [
        {"partition": index, "spu": replicas[0], "replicas": list(replicas)}
        for index, replicas in sorted(topic.status.replica_map.items())
        if index >= first_new
    ]
    if args.output == "table":
        print(f'added {args.count} partition(s) to topic "{topic.name}"')
        if topic.status.reason:  # the SC could not place them yet
            print(f"not provisioned yet: {topic.status.reason}")
    emit(rows, args.output, columns=("partition", "spu", "replicas"))
    return 0


def partition_lags(groups: Iterable[Iterable[dict[str, Any]]]) -> dict[tuple[str, int], int]:
    """The lag of each partition some group committed an offset of: the largest among
    those groups (the one furthest behind), from ``describe_group`` rows per group.

    A group without a committed offset of a partition has no lag there (Kafka's ``-``).
    """
    lags: dict[tuple[str, int], int] = {}
    for rows in groups:
        for row in rows:
            if row.get("lag") is None:
                continue
            tp = (str(row["topic"]), int(row["partition"]))
            lags[tp] = max(lags.get(tp, 0), int(row["lag"]))
    return lags


def partition_list(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """List partitions: leader, leader epoch, replicas, resolution, size, log start, LEO,
    HW, LRS, and the lag of the consumer groups that committed offsets of it."""
    admin = fluvio.admin()
    parts = admin.list_partitions(args.topic)
    parts.sort(key=lambda p: (p.topic, p.index))
    names = [g["name"] for g in admin.list_groups()]
    lags = partition_lags(admin.describe_group(name).partitions for name in names)
    human = args.output == "table"
    rows = [partition_row(p, human=human) | {"lag": lags.get((p.topic, p.index))} for p in parts]
    emit(rows, args.output, columns=PARTITION_LIST_COLUMNS)
    return 0


def partition_elect_preferred(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Move leaders back to their preferred replicas; print each partition moved or left."""
    election = fluvio.admin().elect_preferred(args.topic)
    rows = [{"partition": name, "result": "moved"} for name in election.moved] + [
        {"partition": name, "result": "pending"} for name in election.pending
    ]
    if args.output == "table":
        print(
            f"moved {len(election.moved)} partition(s) to their preferred leader; "
            f"{len(election.pending)} still led elsewhere"
        )
    emit(rows, args.output, columns=("partition", "result"))
    return 0


def spu_register(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Register a custom SPU."""
    fields: dict[str, Any] = {}
    if args.public_server:
        host, port = parse_endpoint(args.public_server, what="--public-server")
        fields["publicEndpoint"] = {"port": port, "ingress": [{"hostname": host}]}
    if args.private_server:
        host, port = parse_endpoint(args.private_server, what="--private-server")
        fields["privateEndpoint"] = {"port": port, "host": host}
    if args.rack:
        fields["rack"] = args.rack
    path = Path(args.secret_file) if args.secret_file else None
    if path is not None and path.exists():
        secret = read_secret_file(path)
    else:
        secret = new_secret()
        if path is not None:
            write_secret_file(path, secret)
    spu = fluvio.admin().register_spu(args.id, name=args.name, secret=secret, **fields)
    print(f'custom SPU "{spu.name}" ({spu.spu_id}) registered')
    if path is not None:
        print(f"its secret is in {path}: copy it to the SPU's data dir as {SECRET_FILE}")
    else:
        print(f"secret (shown once; give it to the SPU as FLUVIO_SPU_SECRET): {secret}")
    return 0


def spu_unregister(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Remove a custom SPU."""
    if (args.id is None) == (args.name is None):
        raise InvalidConfigError("cluster spu unregister: give exactly one of --id, --name")
    fluvio.admin().unregister_spu(args.id, name=args.name)
    print(f"custom SPU {args.id if args.id is not None else args.name} unregistered")
    return 0


def spu_list(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """List SPUs."""
    emit([spu_row(s) for s in fluvio.admin().list_spus()], args.output, columns=SPU_COLUMNS)
    return 0


def spg_create(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Create an SPU group."""
    template: dict[str, Any] = {}
    if args.rack:
        template["rack"] = args.rack
    if args.storage_size:
        template["storage"] = {"size": args.storage_size}
    spec: dict[str, Any] = {"replicas": args.replicas, "min_id": args.min_id}
    if template:
        spec["template"] = template
    group = fluvio.admin().create_spu_group(args.name, spec)
    print(f'SPU group "{group.name}" created')
    return 0


def spg_delete(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Delete an SPU group."""
    fluvio.admin().delete_spu_group(args.name)
    print(f'SPU group "{args.name}" deleted')
    return 0


def spg_list(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """List SPU groups."""
    rows = [spg_row(g) for g in fluvio.admin().list_spu_groups()]
    emit(rows, args.output, columns=SPG_COLUMNS)
    return 0
