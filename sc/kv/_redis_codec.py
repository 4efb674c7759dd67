"""How the Redis KV store's values look in Redis: key names, script arguments, replies.

Pure (no client, no I/O), so the translation is tested by tables without a server. The
key layout is written once, at the top of ``sc.kv._lua``; ``RedisKeys`` names the keys
the Python side reads directly (the scripts build theirs from the prefix). Replies come
from a client with ``decode_responses`` in RESP2, so they are text and nested lists;
each script replies with a status word first, which ``check_write`` and
``check_offsets_write`` turn into typed errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sc.kv import groups as g
from sc.kv.groups import (
    CommitOutcome,
    CommitResult,
    Grant,
    OffsetCommit,
    StoredOffset,
    TopicPartition,
)
from sc.kv.store import ChangeEvent, ChangeType
from sc.lease import LeaseClaim
from spark_stream.errors import (
    ConflictError,
    GroupNotEmptyError,
    KvUnavailableError,
    NotFoundError,
    ObjectExistsError,
    UnknownGroupError,
    UnknownPartitionError,
)
from spark_stream.models import KvObject, object_class, parse_model

if TYPE_CHECKING:
    from redis.typing import EncodableT, XReadResponse

__all__ = [
    "RedisKeys",
    "check_create",
    "check_offsets_write",
    "check_write",
    "commit_fields",
    "commit_results",
    "decode_object",
    "entry_revision",
    "feed_entries",
    "feed_event",
    "lease_record",
    "lease_refused",
    "offset_fields",
    "owner_fields",
    "text",
    "to_json",
]


@dataclass(frozen=True)
class RedisKeys:
    """The keys under ``prefix`` that the store reads without a script."""

    prefix: str

    @property
    def rev(self) -> str:
        """The store-wide revision counter."""
        return f"{self.prefix}:rev"

    @property
    def feed(self) -> str:
        """The change feed (a stream whose entry ids are ``{revision}-0``)."""
        return f"{self.prefix}:feed"

    @property
    def lease(self) -> str:
        """The active-SC lease record, ``{token}|{holder}``."""
        return f"{self.prefix}:lease"

    @property
    def tombstones(self) -> str:
        """The deleted partitions' uids (a sorted set)."""
        return f"{self.prefix}:tombstones"

    def group(self, name: str, what: str) -> str:
        """A consumer group's hash: ``own`` (owner map) or ``off`` (offsets)."""
        return f"{self.prefix}:grp:{name}:{what}"


def to_json(model: Any, **kwargs: Any) -> str:
    """A model as the compact JSON the scripts store (wire names, no ``None`` fields)."""
    return json.dumps(
        model.model_dump(by_alias=True, mode="json", exclude_none=True, **kwargs),
        separators=(",", ":"),
    )


def decode_object(kind: str, rev: Any, meta: str, spec: str, status: str) -> KvObject[Any, Any]:
    """An object from its stored parts (the revision is kept apart from the metadata)."""
    data = {
        "metadata": {**json.loads(meta), "revision": int(rev)},
        "spec": json.loads(spec),
        "status": json.loads(status),
    }
    return parse_model(object_class(kind), data)


def text(value: bytes | str) -> str:
    """A reply string (the client decodes replies; bytes only if configured otherwise)."""
    return value if isinstance(value, str) else value.decode()


def entry_revision(entry_id: str) -> int:
    """The revision of a feed entry (its id is ``{revision}-0``)."""
    return int(entry_id.split("-", 1)[0])


def feed_entries(reply: XReadResponse) -> list[tuple[str, dict[str, str]]]:
    """The entries of an ``XREAD`` reply on the one feed stream.

    The client speaks RESP2 with ``decode_responses``, so the reply is
    ``[[feed, [(entry_id, fields), ...]]]``, or empty when nothing was read.

    Raises:
        KvUnavailableError: the server answered in RESP3 (a map), which this store
            does not speak.
    """
    if isinstance(reply, dict):
        raise KvUnavailableError("redis answered XREAD in RESP3; this store speaks RESP2")
    return reply[0][1] if reply else []


def feed_event(revision: int, fields: Mapping[str, str]) -> ChangeEvent:
    """The change a feed entry at ``revision`` records."""
    kind = fields["kind"]
    obj = decode_object(kind, fields["orev"], fields["meta"], fields["spec"], fields["status"])
    return ChangeEvent(kind, obj.name, ChangeType(fields["type"]), obj, revision)


def lease_refused(reply: Sequence[Any]) -> LeaseClaim:
    """A lease script's refusal: ``[status, token, holder]`` of the lease that stands."""
    return LeaseClaim(False, int(reply[1]), text(reply[2]))


def lease_record(value: bytes | str | None) -> LeaseClaim:
    """The lease record ``{token}|{holder}`` as read (nothing held: token 0)."""
    if not value:
        return LeaseClaim(False, 0, "")
    token, _, holder = text(value).partition("|")
    return LeaseClaim(False, int(token), holder)


def check_create(reply: Sequence[Any], kind: str, name: str, parent: Any) -> None:
    """Raise the typed error ``CREATE``'s status word means (``ok``: nothing).

    Raises:
        ObjectExistsError: ``exists``.
        NotFoundError: ``noparent`` (``parent``, the object's parent reference, is gone).
    """
    if reply[0] == "exists":
        raise ObjectExistsError(f"{kind} {name!r} already exists")
    if reply[0] == "noparent":
        raise NotFoundError(f"{kind} {name!r}: parent {parent} does not exist")


def check_write(reply: Sequence[Any], kind: str, name: str, expected: int | None) -> None:
    """Raise the typed error an object write's status word means (``ok``: nothing).

    Raises:
        NotFoundError: ``missing``.
        ConflictError: ``conflict`` (the object is at another revision).
        GroupNotEmptyError: ``busy`` (a group that still holds grants).
    """
    if reply[0] == "missing":
        raise NotFoundError(f"{kind} {name!r} does not exist")
    if reply[0] == "conflict":
        raise ConflictError(f"{kind} {name!r} is at revision {reply[1]}, not {expected}")
    if reply[0] == "busy":
        raise GroupNotEmptyError(f"group {name!r} holds grants: not deleted")


def check_offsets_write(reply: Sequence[Any], name: str) -> None:
    """Raise the typed error ``WRITE_OFFSETS``'s status word means (``ok``: nothing).

    Raises:
        UnknownGroupError: ``missing``.
        GroupNotEmptyError: ``busy`` (the group holds grants).
        UnknownPartitionError: ``unknown`` (with the partition it names).
    """
    if reply[0] == "missing":
        raise UnknownGroupError(f"group {name!r} does not exist")
    if reply[0] == "busy":
        raise GroupNotEmptyError(f"group {name!r} holds grants: offsets not written")
    if reply[0] == "unknown":
        raise UnknownPartitionError(f"partition {reply[1]}/{reply[2]} does not exist")


def owner_fields(owners: Mapping[TopicPartition, Grant]) -> list[EncodableT]:
    """An owner map as ``PUBLISH_PLAN``'s field/value pairs, in partition order."""
    args: list[EncodableT] = []
    for tp, grant in sorted(owners.items()):
        args += [g.field(*tp), g.grant_value(grant)]
    return args


def commit_fields(commits: Sequence[OffsetCommit], ts_ms: int) -> list[EncodableT]:
    """Commits as ``COMMIT``'s field/value pairs, each stamped ``ts_ms``."""
    args: list[EncodableT] = []
    for c in commits:
        value = g.offset_value(StoredOffset(c.offset, c.grant_epoch, ts_ms, c.metadata))
        args += [g.field(c.topic, c.partition), value]
    return args


def offset_fields(
    offsets: Mapping[TopicPartition, int], ts_ms: int, metadata: str
) -> list[EncodableT]:
    """Offsets set by an operator as ``WRITE_OFFSETS``'s (topic, index, value) triples
    (no grant epoch: no member wrote them)."""
    args: list[EncodableT] = []
    for (topic, index), offset in offsets.items():
        args += [topic, index, g.offset_value(StoredOffset(offset, None, ts_ms, metadata))]
    return args


def commit_results(commits: Sequence[OffsetCommit], reply: Sequence[Any]) -> list[CommitResult]:
    """``COMMIT``'s reply (an outcome and a grant epoch or ``''`` per commit) as results."""
    return [
        CommitResult(
            c.topic,
            c.partition,
            CommitOutcome(reply[2 * i]),
            int(reply[2 * i + 1]) if reply[2 * i + 1] else None,
        )
        for i, c in enumerate(commits)
    ]
