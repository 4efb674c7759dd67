"""The KV store interface: revisioned objects, compare-and-set writes, a change feed.

Theory of operation:

- Every write (create, spec update, status update, delete) takes the next value of one
  store-wide counter, the *revision*. An object's ``metadata.revision`` is the revision
  of its last write, so revisions order all changes totally.
- Writes are compare-and-set: a spec update names the revision it read, and loses with
  ``ConflictError`` if the object changed since. Status updates may skip the check
  (``expected_revision=None``): the SPU leader owns partition status.
- Every write also appends one change to a bounded change feed, in the same atomic step.
  ``watch(kind, from_revision)`` yields the changes after ``from_revision``, in order.
  When the feed no longer holds the change right after the watcher's position (it was
  trimmed, or the store lost data), the watcher receives one ``Resync`` carrying a full
  listing at some revision and continues from there; the consumer replaces its mirror.
- ``create`` gives every new object a fresh ``metadata.uid`` (``new_uid``), whatever the
  caller put there; later writes keep it. A name deleted and created again gets a new
  uid, so a consumer of the feed (an SPU, through the SC) can tell the two apart.
- Objects may have a parent (``metadata.parent``, e.g. a partition's topic). Creating a
  child needs its parent; deleting a parent deletes its children first, in the same
  atomic step, each with its own ``DELETED`` change.

- The active-SC lease (``sc.lease``): ``claim_lease``/``renew_lease``/``release_lease``
  keep one lease record and the last fencing token issued. After ``fence(token)``,
  every write of this store object (objects, consumer-group data, the store's id and
  tombstones) is refused with ``NotActiveError``, before it changes anything, unless
  ``token`` is still the last issued. A store never fenced writes unconditionally
  (tools, tests, a single SC).

- Consumer groups keep an owner map (the commit fence) and offsets beside the group
  object, outside the feed and the revision counter; ``publish_group_plan`` writes the
  status and the owner map together. See ``sc.kv.groups``.

The usual reader: ``objects, rev = await store.list_objects(kind)``, then
``async for event in store.watch(kind, rev)``.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sc.kv.groups import (
    GROUP_KIND,
    CommitResult,
    Grant,
    OffsetCommit,
    StoredOffset,
    TopicPartition,
)
from sc.lease import LeaseClaim
from spark_stream.errors import NotActiveError
from spark_stream.models import KINDS, KvObject, object_class, parse_model

__all__ = [
    "ChangeType",
    "ChangeEvent",
    "Resync",
    "WatchEvent",
    "KvStore",
    "KindFilter",
    "watched_kinds",
    "coerce_part",
    "new_uid",
    "DEFAULT_FEED_RETENTION",
    "TOMBSTONES_MAX",
]

#: How many changes the feed keeps by default before trimming the oldest.
DEFAULT_FEED_RETENTION = 10_000

#: How many uids of deleted partitions a store remembers (``add_tombstones``).
TOMBSTONES_MAX = 100_000

#: ``None`` for every registered kind, one kind name, or several.
KindFilter = str | Collection[str] | None


class ChangeType(StrEnum):
    """What happened to an object."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change from the feed.

    Attributes:
        kind: the object's kind (``Topic``, ``Partition``, ...).
        name: the object's name.
        type: added, modified or deleted.
        object: the object after the change; for ``DELETED``, its last stored state.
        revision: the store revision of this change.
    """

    kind: str
    name: str
    type: ChangeType
    object: KvObject[Any, Any]
    revision: int


@dataclass(frozen=True, slots=True)
class Resync:
    """The watcher fell behind the feed: replace the mirror with this listing.

    Attributes:
        revision: the store revision the listing reflects; the watch continues after it.
        objects: every object of each watched kind (a kind with none maps to ``()``).
    """

    revision: int
    objects: Mapping[str, tuple[KvObject[Any, Any], ...]]


WatchEvent = ChangeEvent | Resync


def watched_kinds(kinds: KindFilter) -> tuple[str, ...]:
    """Normalise a kind filter into a tuple of registered kind names.

    Raises:
        InvalidConfigError: a kind is not registered.
    """
    if kinds is None:
        return tuple(KINDS)
    names = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    for kind in names:
        object_class(kind)
    return names


def new_uid() -> str:
    """A fresh object uid (a random UUID in hex): unique without asking the store.

    Random rather than derived from the revision, so an SPU that kept data across a
    reset of the store cannot mistake an old replica for a new one with the same name.
    """
    return uuid.uuid4().hex


def coerce_part(kind: str, part: str, value: Any) -> Any:
    """Validate ``value`` as the ``spec`` or ``status`` model of ``kind``.

    Accepts a model instance or a dict; a model of another type is rejected.

    Raises:
        InvalidConfigError: unknown kind or invalid value; the message names the field.
    """
    cls = object_class(kind)
    part_cls = cls.model_fields[part].annotation
    if not isinstance(part_cls, type):  # pragma: no cover - every kind has concrete parts
        raise TypeError(f"{kind}.{part} has no concrete model type")
    if isinstance(value, part_cls):
        return value
    return parse_model(part_cls, value)


class KvStore(abc.ABC):
    """Revisioned, compare-and-set object store with a resumable change feed."""

    #: The fencing token every write carries (None: unfenced); set by ``fence``.
    _fence: int | None = None
    #: Called with the store's last token when a write was refused by the fence: the
    #: SC's leadership steps down at once (a token below its own: the store lost data).
    on_deposed: Callable[[int], None] | None = None

    def _deposed(self, last: object) -> NotActiveError:
        """The error of a write refused by the fence (``on_deposed`` is told first)."""
        if self.on_deposed is not None:
            self.on_deposed(int(str(last)))
        return NotActiveError(
            f"fenced: this SC's lease token {self._fence} was superseded by {last}"
        )

    def fence(self, token: int | None) -> None:
        """Carry ``token`` in every later write: refused once it is not the last issued.

        Args:
            token: the token of this SC's lease grant; None writes unfenced.
        """
        self._fence = token

    @property
    def fence_token(self) -> int | None:
        """The token writes carry (None: unfenced)."""
        return self._fence

    # -- the active-SC lease (see ``sc.lease`` for the rules) ---------------------------

    @abc.abstractmethod
    async def claim_lease(self, holder: str, ttl_s: float) -> LeaseClaim:
        """Take the lease for ``holder`` when it is free, expired or already its own.

        Returns:
            Granted with a new token (the last issued plus one), or refused naming the
            current holder and token.
        """

    @abc.abstractmethod
    async def renew_lease(self, token: int, holder: str, ttl_s: float) -> LeaseClaim:
        """Extend the lease of ``token``; refused (lost) when another SC took it since."""

    @abc.abstractmethod
    async def release_lease(self, token: int) -> None:
        """Drop the lease record if ``token`` holds it (a clean stop: no wait for the TTL)."""

    @abc.abstractmethod
    async def lease_holder(self) -> LeaseClaim:
        """The current holder and token, not granted ("" and 0 when nobody holds it)."""

    @abc.abstractmethod
    async def get(self, kind: str, name: str) -> KvObject[Any, Any] | None:
        """Return the object, or ``None`` when there is none of that name."""

    @abc.abstractmethod
    async def list_objects(self, kind: str) -> tuple[list[KvObject[Any, Any]], int]:
        """Return every object of ``kind`` (sorted by name) and the store revision."""

    @abc.abstractmethod
    async def list_kinds(
        self, kinds: KindFilter = None
    ) -> tuple[dict[str, list[KvObject[Any, Any]]], int]:
        """Return the objects of several kinds and the revision, in one snapshot."""

    @abc.abstractmethod
    async def revision(self) -> int:
        """Return the store's current revision (0 when nothing was ever written)."""

    @abc.abstractmethod
    async def store_id(self) -> str:
        """The identity of this store's data: a random id written with its first use.

        A store that lost its data (flushed, replaced by an empty server) answers a new
        id, so whoever recorded the old one (an SPU, in ``ReplicaMeta``) can tell that
        this store forgot what it knew (``sc.rebuild``).
        """

    @abc.abstractmethod
    async def add_tombstones(self, uids: Collection[str]) -> None:
        """Remember the uids of deleted partitions (the newest ``TOMBSTONES_MAX`` kept).

        An SPU that was away reports a deleted partition's metadata; if that record
        names an older store (this one was rebuilt meanwhile, ``sc.rebuild``), its uid
        here tells a deleted partition from a forgotten one.
        """

    @abc.abstractmethod
    async def tombstones(self) -> frozenset[str]:
        """The uids ``add_tombstones`` remembers."""

    @abc.abstractmethod
    async def create(
        self, obj: KvObject[Any, Any], *, keep_uid: bool = False
    ) -> KvObject[Any, Any]:
        """Store a new object; its revision (and uid, unless ``keep_uid``) are ignored.

        ``keep_uid`` is for rebuilding an object the store forgot (``sc.rebuild``): the
        SPUs' storage names its partition by that uid.

        Returns:
            The stored object, carrying its new revision and a new uid (``new_uid``),
            or its own uid with ``keep_uid`` (a new one when it has none).

        Raises:
            ObjectExistsError: an object of that kind and name exists.
            NotFoundError: ``metadata.parent`` names an object that does not exist.
        """

    @abc.abstractmethod
    async def update_spec(
        self, kind: str, name: str, spec: Any, expected_revision: int
    ) -> KvObject[Any, Any]:
        """Replace an object's spec if its revision is still ``expected_revision``.

        Raises:
            NotFoundError: no such object.
            ConflictError: the object's revision is not ``expected_revision``.
            InvalidConfigError: ``spec`` is not a valid spec of ``kind``.
        """

    @abc.abstractmethod
    async def update_status(
        self, kind: str, name: str, status: Any, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        """Replace an object's status; compare-and-set when ``expected_revision`` is given.

        Raises:
            NotFoundError: no such object.
            ConflictError: ``expected_revision`` given and not current.
            InvalidConfigError: ``status`` is not a valid status of ``kind``.
        """

    @abc.abstractmethod
    async def delete(
        self, kind: str, name: str, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        """Delete an object and, first, its children; return the object's last state.

        Deleting a partition also removes its grant and offset from every group; a
        ``ConsumerGroup`` (``GROUP_KIND``) is deleted as by ``delete_group``.

        Raises:
            NotFoundError: no such object.
            ConflictError: ``expected_revision`` given and not current.
            GroupNotEmptyError: a group whose owner map still holds grants.
        """

    # -- consumer groups (see ``sc.kv.groups`` for the theory of operation) ------------

    @abc.abstractmethod
    async def publish_group_plan(
        self,
        name: str,
        status: Any,
        owners: Mapping[TopicPartition, Grant],
        expected_revision: int,
        *,
        kind: str = GROUP_KIND,
    ) -> KvObject[Any, Any]:
        """Write a group's status and replace its owner map, in one atomic step.

        Compare-and-set on the object's revision; the status write is one ``MODIFIED``
        change in the feed, as ``update_status``. The owner map is not in the feed.

        Args:
            name: the group (object) name.
            status: the group's new status (model or dict).
            owners: the whole new owner map; partitions not in it have no grant.
            expected_revision: the revision the plan was computed from.
            kind: the group object's kind.

        Returns:
            The stored object.

        Raises:
            NotFoundError: no such object.
            ConflictError: the object's revision is not ``expected_revision``.
            InvalidConfigError: ``status`` is not a valid status of ``kind``.
            InvalidRequestError: a malformed owner entry (the message names it).
        """

    @abc.abstractmethod
    async def fetch_group_owners(self, name: str) -> dict[TopicPartition, Grant]:
        """Return a group's owner map (empty when it has none)."""

    @abc.abstractmethod
    async def commit_group_offsets(
        self, name: str, member_id: str, commits: Collection[OffsetCommit]
    ) -> list[CommitResult]:
        """Store a member's offsets, fenced per partition; one atomic step.

        A partition is accepted only if it exists, the owner map says
        ``member_id|grant_epoch`` for it, and the offset is not below the stored one.
        Refused partitions are results, not exceptions: the others are still stored.

        Returns:
            One result per commit, in request order.

        Raises:
            InvalidRequestError: malformed input (nothing is stored).
        """

    @abc.abstractmethod
    async def write_group_offsets(
        self,
        name: str,
        offsets: Mapping[TopicPartition, int],
        *,
        metadata: str = "",
        kind: str = GROUP_KIND,
    ) -> None:
        """Store offsets without fencing (an explicit reset, or Spark's progress mirror).

        They may move backwards. All or nothing: refused while the group holds any
        grant, so it can never overwrite a live member's progress.

        Raises:
            UnknownGroupError: no ``kind`` object of that name.
            GroupNotEmptyError: the group's owner map holds grants.
            UnknownPartitionError: a partition does not exist.
            InvalidRequestError: malformed input.
        """

    @abc.abstractmethod
    async def fetch_group_offsets(
        self, name: str, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, StoredOffset]:
        """Return a group's stored offsets (of ``partitions`` only, when given).

        Partitions without a stored offset are absent from the result.

        Raises:
            InvalidRequestError: malformed input.
        """

    @abc.abstractmethod
    async def delete_group_offsets(self, name: str, topic: str | None = None) -> int:
        """Delete a group's offsets (of ``topic`` only, when given); return how many.

        Raises:
            GroupNotEmptyError: the group holds a grant (on ``topic``, when given).
            InvalidRequestError: malformed input.
        """

    @abc.abstractmethod
    async def delete_group(
        self, name: str, expected_revision: int | None = None, *, kind: str = GROUP_KIND
    ) -> KvObject[Any, Any]:
        """Delete a group object with its owner map and offsets, in one atomic step.

        Returns:
            The object's last state (its ``DELETED`` change is in the feed).

        Raises:
            NotFoundError: no such object.
            ConflictError: ``expected_revision`` given and not current.
            GroupNotEmptyError: the owner map holds grants (publish an empty plan first).
        """

    @abc.abstractmethod
    def watch(self, kinds: KindFilter, from_revision: int) -> AsyncIterator[WatchEvent]:
        """Yield the changes to ``kinds`` after ``from_revision``, then wait for more.

        Yields ``Resync`` instead when the feed cannot continue from the position. The
        iterator runs until the caller stops iterating (or the store closes).

        Raises:
            InvalidConfigError: an unknown kind (raised by the call, not the iteration).
            KvUnavailableError: the backend stayed unreachable past its reconnect timeout.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections; running watches end."""
