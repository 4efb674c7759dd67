"""``fluvio consumer-group list | describe | delete | reset``, with Kafka's columns.

Each handler takes the parsed arguments and a connected ``Fluvio``, calls the admin API
(``AdminClient`` group methods), and prints rows through ``output.emit``. ``reset`` is a
dry run unless ``--execute`` is given. Column names are ``kafka-consumer-groups``' where
the meaning is the same (``CURRENT-OFFSET``, ``LOG-END-OFFSET``, ``CONSUMER-ID``...);
``HIGH-WATERMARK`` is ours, and ``LAG`` is measured to it (what a member can read).
``describe --state`` is one row per group (``-O json|yaml`` add the coordinator's
counters under ``metrics``); ``describe --members`` one per member, with its ``STATE``.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any

from spark_stream.cli.output import emit
from spark_stream.cli.parsing import parse_duration
from spark_stream.client import Fluvio
from spark_stream.errors import InvalidConfigError
from spark_stream.models import GroupState

__all__ = [
    "LIST_COLUMNS",
    "DESCRIBE_COLUMNS",
    "MEMBER_COLUMNS",
    "STATE_COLUMNS",
    "RESET_COLUMNS",
    "group_list",
    "group_describe",
    "group_delete",
    "group_reset",
    "add_parsers",
]

LIST_COLUMNS = ("group", "state", "members", "topics", "generation", "lag")
DESCRIBE_COLUMNS = (
    "group",
    "topic",
    "partition",
    "current-offset",
    "high-watermark",
    "log-end-offset",
    "lag",
    "consumer-id",
    "group-instance-id",
    "host",
    "client-id",
    "last-commit",
)
MEMBER_COLUMNS = (
    "group",
    "consumer-id",
    "group-instance-id",
    "host",
    "client-id",
    "#partitions",
    "epoch",
    "state",
)
STATE_COLUMNS = (
    "group",
    "coordinator",
    "assignment-strategy",
    "state",
    "#members",
    "generation",
)
RESET_COLUMNS = ("topic", "partition", "old", "new")


def group_list(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """List groups: state, members, topics, generation, total lag."""
    rows = [
        {
            "group": g["name"],
            "state": g["state"],
            "members": g["members"],
            "topics": g["topics"],
            "generation": g["generation"],
            "lag": g["lag"],
        }
        for g in fluvio.admin().list_groups()
    ]
    emit(rows, args.output, columns=LIST_COLUMNS)
    return 0


def group_describe(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Per partition (or, with ``--members``, per member; ``--state``, the group)."""
    if args.verbose and not args.members:
        raise InvalidConfigError("describe: --verbose goes with --members")
    desc = fluvio.admin().describe_group(args.group)
    status = desc.group.get("status", {})
    if args.state:
        row = {
            "group": args.group,
            "coordinator": fluvio.endpoint,
            "assignment-strategy": desc.assignor or None,
            "state": status.get("state"),
            "#members": len(status.get("members", [])),
            "generation": status.get("generation"),
        }
        if args.output != "table":
            row["metrics"] = desc.metrics
        emit([row], args.output, columns=STATE_COLUMNS)
        return 0
    if args.members:
        rows = _member_rows(args.group, status, set(desc.live), verbose=args.verbose)
        columns = (*MEMBER_COLUMNS, "assignment") if args.verbose else MEMBER_COLUMNS
        emit(rows, args.output, columns=columns)
        return 0
    rows = [
        {
            "group": args.group,
            "topic": r["topic"],
            "partition": r["partition"],
            "current-offset": r["offset"],
            "high-watermark": r["hw"],
            "log-end-offset": r["leo"],
            "lag": r["lag"],
            "consumer-id": r["memberId"],
            "group-instance-id": r["instanceId"],
            "host": r["host"],
            "client-id": r["clientId"],
            "last-commit": r["lastCommitMs"],
        }
        for r in desc.partitions
    ]
    emit(rows, args.output, columns=DESCRIBE_COLUMNS)
    return 0


def member_state(member_id: str, grants: list[dict[str, Any]], live: set[str]) -> str:
    """``Away`` (no session on the SC: a static member between connections, or not back
    after an SC restart), ``Revoking`` (it still holds a partition being moved), or
    ``Stable``."""
    if member_id not in live:
        return "Away"
    if any(g.get("revoking") for g in grants):
        return "Revoking"
    return "Stable"


def _member_rows(
    group: str, status: dict[str, Any], live: set[str], *, verbose: bool
) -> list[dict[str, Any]]:
    grants: dict[str, list[dict[str, Any]]] = {}
    for g in status.get("assignment", []):
        grants.setdefault(g["memberId"], []).append(g)
    rows = []
    for m in status.get("members", []):
        held = grants.get(m["memberId"], [])
        row: dict[str, Any] = {
            "group": group,
            "consumer-id": m["memberId"],
            "group-instance-id": m.get("instanceId"),
            "host": m.get("host"),
            "client-id": m.get("clientId"),
            "#partitions": len(held),
            "epoch": m.get("memberEpoch"),
            "state": member_state(m["memberId"], held, live),
        }
        if verbose:  # Kafka's form: topic(0,1)
            by_topic: dict[str, list[int]] = {}
            for g in held:
                by_topic.setdefault(g["topic"], []).append(g["partition"])
            row["assignment"] = ",".join(
                f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items())
            )
        rows.append(row)
    return rows


def group_delete(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Delete a group (or only its offsets of ``--topic``)."""
    admin = fluvio.admin()
    row: dict[str, Any] = {"group": args.group, "topic": args.topic}
    if args.topic:
        row["offsets-deleted"] = admin.delete_offsets(args.group, args.topic)
        count = row["offsets-deleted"]
        text = f'{count} offset(s) of topic "{args.topic}" deleted from group "{args.group}"'
    else:
        admin.delete_group(args.group)
        row["group-deleted"] = True
        text = f'consumer group "{args.group}" deleted'
    if args.output == "table":
        print(text)
    else:
        emit(row, args.output)
    return 0


def _mode(args: argparse.Namespace) -> tuple[str, int]:
    if args.to_earliest:
        return "earliest", 0
    if args.to_latest:
        return "latest", 0
    if args.to_offset is not None:
        return "offset", args.to_offset
    if args.shift_by is not None:
        return "shift-by", args.shift_by
    if args.to_datetime is not None:
        return "to-datetime", 0
    if args.by_duration is not None:
        return "by-duration", 0
    raise InvalidConfigError(
        "reset: give one of --to-earliest, --to-latest, --to-offset N, --shift-by N, "
        "--to-datetime ISO, --by-duration 1h"
    )


def _time_us(args: argparse.Namespace) -> int:
    """The time a ``--to-datetime``/``--by-duration`` reset goes back to, in Unix us."""
    if args.by_duration is not None:
        return int((time.time() - parse_duration(args.by_duration, "--by-duration")) * 1e6)
    try:
        when = datetime.fromisoformat(args.to_datetime)
    except ValueError:
        raise InvalidConfigError(
            f"--to-datetime: {args.to_datetime!r} is not an ISO date-time "
            "(e.g. 2026-01-31T12:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1e6)


def _resolve_times(args: argparse.Namespace, fluvio: Fluvio) -> dict[tuple[str, int], int]:
    """Per partition, the first offset at or after the time (the HW when none is).

    Only partition leaders know record times, so the client asks them and sends the SC
    absolute offsets (``docs/decisions.md``).
    """
    admin = fluvio.admin()
    if args.topic:
        topics = [args.topic]
    else:
        topics = sorted({r["topic"] for r in admin.describe_group(args.group).partitions})
    ts_us = _time_us(args)
    offsets: dict[tuple[str, int], int] = {}
    for topic in topics:
        for part in admin.list_partitions(topic):
            found = fluvio.offset_for_timestamp(topic, part.index, ts_us)
            if found is None:  # no record that recent: the end (the leader's HW)
                found = fluvio.fetch_offsets(topic, part.index).hw
            offsets[(topic, part.index)] = found
    return offsets


def group_reset(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Plan (and with ``--execute``, write) new offsets; prints ``TOPIC PARTITION OLD NEW``."""
    if not args.topic and not args.all_topics:
        raise InvalidConfigError("reset: give --topic T or --all-topics")
    mode, value = _mode(args)
    given = _resolve_times(args, fluvio) if mode in ("to-datetime", "by-duration") else None
    reply = fluvio.admin().reset_offsets(
        args.group, mode, topic=args.topic, value=value, offsets=given, execute=args.execute
    )
    rows: list[dict[str, Any]] = [
        {"topic": r["topic"], "partition": r["partition"], "old": r["current"], "new": r["target"]}
        for r in reply.plan
    ]
    emit(rows, args.output, columns=RESET_COLUMNS)
    if not reply.executed and args.output == "table":
        print("dry run: nothing written (add --execute to write)")
    if _is_progress_group(fluvio, args.group):
        print(
            f"warning: {args.group!r} is a Spark progress group (progressGroup): its offsets "
            "mirror a query's checkpoint, which the query rewrites at its next trigger and "
            "never reads; to move the query, restart it from another checkpoint",
            file=sys.stderr,
        )
    return 0


def _is_progress_group(fluvio: Fluvio, group: str) -> bool:
    """The group only mirrors a Spark query's progress (``kind: external``)."""
    status = fluvio.admin().describe_group(group).group.get("status", {})
    return bool(status.get("state") == GroupState.EXTERNAL.value)


def add_parsers(sub: Any, client: Any) -> None:
    """Add ``consumer-group`` and its subcommands (``client`` is app.py's ``_client``)."""
    group = sub.add_parser("consumer-group", help="consumer groups: list, describe, delete, reset")
    gsub = group.add_subparsers(dest="group_command", required=True)
    client(gsub, "list", group_list, "list consumer groups", output=True)
    desc = client(gsub, "describe", group_describe, "offsets and lag of a group", output=True)
    desc.add_argument("group")
    view = desc.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one row per member")
    view.add_argument(
        "--state",
        action="store_true",
        help="the group: coordinator, assignor, state, members, generation (-O json: metrics)",
    )
    desc.add_argument(
        "--verbose", action="store_true", help="with --members: each member's partitions"
    )
    delete = client(gsub, "delete", group_delete, "delete a group (no live members)", output=True)
    delete.add_argument("group")
    delete.add_argument("--topic", help="delete only this topic's offsets")
    reset = client(gsub, "reset", group_reset, "reset committed offsets (dry run)", output=True)
    reset.add_argument("group")
    where = reset.add_mutually_exclusive_group()
    where.add_argument("--topic")
    where.add_argument("--all-topics", action="store_true")
    how = reset.add_mutually_exclusive_group()
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int)
    how.add_argument("--shift-by", type=int)
    how.add_argument("--to-datetime", help="ISO date-time (UTC unless it has an offset)")
    how.add_argument("--by-duration", help="this long ago, e.g. 1h, 30m, 7d")
    reset.add_argument("--execute", action="store_true", help="write the plan")
