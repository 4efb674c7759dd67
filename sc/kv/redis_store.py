"""The product KV store on Redis (redis-py asyncio).

Each write is one Lua script (``sc.kv._lua``, which also lays out the keys) that checks
the revision, writes the object's hashes, bumps the revision counter and appends the
change to a Redis Stream (``XADD ... MAXLEN ~ N`` with id ``{revision}-0``), so the feed
can never disagree with the data; ``watch`` reads that stream (``sc.kv._redis_watch``).
Arguments and replies are translated by ``sc.kv._redis_codec`` (pure).

Every writing script checks the writer's fencing token first (``KvStore.fence``),
naming the store (``STORE_ID``) and adding tombstones (``ADD_TOMBSTONES``) included; the
lease scripts (``CLAIM_LEASE``, ``RENEW_LEASE``, ``RELEASE_LEASE``) keep the record of
``sc.lease`` as a key with a TTL.

Consumer-group owner maps and offsets (``sc.kv.groups``) are hashes beside the objects,
written by their own scripts (``PUBLISH_PLAN``, ``COMMIT``, ``WRITE_OFFSETS``,
``DELETE_OFFSETS``); they take no revision and add nothing to the feed, except the
group status that ``PUBLISH_PLAN`` writes as ``UPDATE`` does.

Connection failures are retried with exponential backoff for up to
``reconnect_timeout`` seconds, then raise ``KvUnavailableError`` (``sc.kv._redis_retry``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from sc.kv import _lua
from sc.kv import groups as g
from sc.kv._batch import ScriptBatcher
from sc.kv._redis_codec import (
    RedisKeys,
    check_create,
    check_offsets_write,
    check_write,
    commit_fields,
    commit_results,
    decode_object,
    lease_record,
    lease_refused,
    offset_fields,
    owner_fields,
    text,
    to_json,
)
from sc.kv._redis_retry import FIRST_RETRY_S, retrying
from sc.kv._redis_watch import FeedReader
from sc.kv.client import close_client, redis_client
from sc.kv.groups import (
    GROUP_KIND,
    CommitResult,
    Grant,
    OffsetCommit,
    StoredOffset,
    TopicPartition,
)
from sc.kv.store import (
    DEFAULT_FEED_RETENTION,
    TOMBSTONES_MAX,
    KindFilter,
    KvStore,
    WatchEvent,
    coerce_part,
    new_uid,
    watched_kinds,
)
from sc.lease import LeaseClaim
from spark_stream.backoff import BackoffPolicy
from spark_stream.errors import GroupNotEmptyError
from spark_stream.models import KvObject, Partition, Topic, object_class

if TYPE_CHECKING:
    from redis.typing import EncodableT

__all__ = ["RedisKvStore"]

T = TypeVar("T")


class RedisKvStore(KvStore):
    """The KV store contract on one Redis server.

    Args:
        url: ``redis://host:port/db``.
        prefix: namespace of every key, so several clusters (or tests) share a server.
        feed_retention: approximate number of changes the stream keeps.
        block_ms: how long one ``XREAD`` waits before the watcher checks its position.
        reconnect_timeout: seconds of failed retries before ``KvUnavailableError``.
        backoff_max: cap of the exponential backoff between retries, in seconds (> 0).
        batch: changes read per ``XREAD``.
        password: Redis AUTH password (a password in ``url`` wins); a wrong or missing
            one fails every call at once with ``UnauthorizedError``.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "fluvio",
        feed_retention: int = DEFAULT_FEED_RETENTION,
        block_ms: int = 1000,
        reconnect_timeout: float = 30.0,
        backoff_max: float = 1.0,
        batch: int = 512,
        password: str | None = None,
    ) -> None:
        if feed_retention < 1:
            raise ValueError("feed_retention must be >= 1")
        self._prefix = prefix
        self._maxlen = feed_retention
        self._reconnect_timeout = reconnect_timeout
        self._backoff = BackoffPolicy(min(FIRST_RETRY_S, backoff_max), backoff_max)
        self._keys = RedisKeys(prefix)
        self._closed = False
        self.on_op: Callable[[str, float], None] | None = None
        """Called with (operation, seconds) after each Redis call (the SC's metrics)."""
        # Retries are ours (bounded by time, with backoff), so redis-py's are off.
        self._redis = redis_client(
            url,
            decode_responses=True,
            socket_timeout=max(10.0, block_ms / 1000 + 5.0),
            socket_connect_timeout=5.0,
            retry=Retry(NoBackoff(), 0),
            password=password,  # a password in the URL wins
        )
        self._create = self._redis.register_script(_lua.CREATE)
        self._update = self._redis.register_script(_lua.UPDATE)
        self._delete = self._redis.register_script(_lua.DELETE)
        self._get = self._redis.register_script(_lua.GET)
        self._list = self._redis.register_script(_lua.LIST)
        self._publish = self._redis.register_script(_lua.PUBLISH_PLAN)
        # Concurrent commits (many members) share round trips: see ``sc.kv._batch``.
        self._commits = ScriptBatcher(
            self._redis,
            self._redis.register_script(_lua.COMMIT),
            functools.partial(self._call, name="commit_offsets"),
        )
        self._write_offsets = self._redis.register_script(_lua.WRITE_OFFSETS)
        self._delete_offsets = self._redis.register_script(_lua.DELETE_OFFSETS)
        self._store_id = self._redis.register_script(_lua.STORE_ID)
        self._add_tombstones = self._redis.register_script(_lua.ADD_TOMBSTONES)
        self._claim = self._redis.register_script(_lua.CLAIM_LEASE)
        self._renew = self._redis.register_script(_lua.RENEW_LEASE)
        self._release = self._redis.register_script(_lua.RELEASE_LEASE)
        self._feed = FeedReader(
            self._redis,
            self._keys,
            batch,
            block_ms,
            reconnect_timeout,
            self._backoff,
            self._call,
            self.list_kinds,
            lambda: self._closed,
        )

    @property
    def prefix(self) -> str:
        """The key prefix this store writes under."""
        return self._prefix

    # -- retry ---------------------------------------------------------------------

    async def _call(self, op: Callable[[], Awaitable[T]], name: str = "other") -> T:
        """Run ``op``, retrying transient connection failures with backoff.

        ``name`` labels the time the call took (retries included) for ``on_op``.
        """
        attempts = retrying(
            op,
            backoff=self._backoff,
            reconnect_timeout=self._reconnect_timeout,
            closed=lambda: self._closed,
        )
        if self.on_op is None:
            return await attempts
        began = time.perf_counter()
        try:
            return await attempts
        finally:
            self.on_op(name, time.perf_counter() - began)

    # -- fencing and the lease -----------------------------------------------------------

    def _fence_arg(self) -> str:
        return "" if self._fence is None else str(self._fence)

    def _check_deposed(self, reply: Any) -> None:
        if isinstance(reply, list) and reply and reply[0] == "deposed":
            raise self._deposed(reply[1])

    async def _write(
        self, script: Callable[..., Awaitable[Any]], args: list[EncodableT], name: str
    ) -> Any:
        """Run a writing script with this store's fencing token in front of ``args``.

        Raises:
            NotActiveError: the token is not the last issued; nothing was written.
        """
        fenced: list[EncodableT] = [self._fence_arg(), *args]
        reply = await self._call(lambda: script(args=fenced), name)
        self._check_deposed(reply)
        return reply

    async def claim_lease(self, holder: str, ttl_s: float) -> LeaseClaim:
        args: list[EncodableT] = [self._prefix, holder, max(1, round(ttl_s * 1000))]
        reply = await self._call(lambda: self._claim(args=args), "lease")
        if reply[0] == "ok":
            return LeaseClaim(True, int(reply[1]), holder)
        return lease_refused(reply)

    async def renew_lease(self, token: int, holder: str, ttl_s: float) -> LeaseClaim:
        args: list[EncodableT] = [self._prefix, token, holder, max(1, round(ttl_s * 1000))]
        reply = await self._call(lambda: self._renew(args=args), "lease")
        if reply[0] == "ok":
            return LeaseClaim(True, token, holder)
        return lease_refused(reply)

    async def release_lease(self, token: int) -> None:
        args: list[EncodableT] = [self._prefix, token]
        await self._call(lambda: self._release(args=args), "lease")

    async def lease_holder(self) -> LeaseClaim:
        value = await self._call(lambda: self._redis.get(self._keys.lease), "lease")
        return lease_record(value)

    # -- reads ---------------------------------------------------------------------

    async def get(self, kind: str, name: str) -> KvObject[Any, Any] | None:
        object_class(kind)
        row = await self._call(lambda: self._get(args=[self._prefix, kind, name]), "get")
        return decode_object(kind, *row) if row else None

    async def list_objects(self, kind: str) -> tuple[list[KvObject[Any, Any]], int]:
        objects, revision = await self.list_kinds(kind)
        return objects[kind], revision

    async def list_kinds(
        self, kinds: KindFilter = None
    ) -> tuple[dict[str, list[KvObject[Any, Any]]], int]:
        names = watched_kinds(kinds)
        reply = await self._call(lambda: self._list(args=[self._prefix, *names]), "list")
        out: dict[str, list[KvObject[Any, Any]]] = {}
        for kind, rows in zip(names, reply[1:], strict=True):
            objs = [decode_object(kind, *rows[i + 1 : i + 5]) for i in range(0, len(rows), 5)]
            out[kind] = sorted(objs, key=lambda o: o.name)
        return out, int(reply[0])

    async def revision(self) -> int:
        value = await self._call(lambda: self._redis.get(self._keys.rev), "revision")
        return int(value or 0)

    # -- writes --------------------------------------------------------------------

    async def store_id(self) -> str:
        # SET NX then GET in one fenced script: the first active SC to ask after the
        # data was lost names the store; a deposed one cannot.
        reply = await self._write(self._store_id, [self._prefix, new_uid()], "store_id")
        return text(reply[1])

    async def add_tombstones(self, uids: Collection[str]) -> None:
        if not uids:
            return
        args: list[EncodableT] = [self._prefix, repr(time.time()), TOMBSTONES_MAX, *uids]
        await self._write(self._add_tombstones, args, "tombstones")

    async def tombstones(self) -> frozenset[str]:
        key = self._keys.tombstones
        members = await self._call(lambda: self._redis.zrange(key, 0, -1), "tombstones")
        return frozenset(str(m) for m in members)  # decode_responses: already text

    async def create(
        self, obj: KvObject[Any, Any], *, keep_uid: bool = False
    ) -> KvObject[Any, Any]:
        obj = obj.with_uid(obj.uid if keep_uid and obj.uid else new_uid())
        kind = obj.kind
        object_class(kind)
        parent = obj.metadata.parent
        args: list[EncodableT] = [
            self._prefix,
            self._maxlen,
            kind,
            obj.name,
            to_json(obj.metadata, exclude={"revision"}),
            to_json(obj.spec),
            to_json(obj.status),
            parent.kind if parent else "",
            parent.name if parent else "",
        ]
        reply = await self._write(self._create, args, "create")
        check_create(reply, kind, obj.name, parent)
        return obj.with_revision(int(reply[1]))

    async def update_spec(
        self, kind: str, name: str, spec: Any, expected_revision: int
    ) -> KvObject[Any, Any]:
        return await self._write_part(kind, name, "spec", spec, expected_revision)

    async def update_status(
        self, kind: str, name: str, status: Any, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        return await self._write_part(kind, name, "status", status, expected_revision)

    async def _write_part(
        self, kind: str, name: str, part: str, value: Any, expected: int | None
    ) -> KvObject[Any, Any]:
        model = coerce_part(kind, part, value)
        args: list[EncodableT] = [
            self._prefix,
            self._maxlen,
            kind,
            name,
            part,
            to_json(model),
            "" if expected is None else str(expected),
        ]
        reply = await self._write(self._update, args, "update")
        check_write(reply, kind, name, expected)
        return decode_object(kind, *reply[1:5])

    async def delete(
        self, kind: str, name: str, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        return await self._remove(kind, name, expected_revision, group=kind == GROUP_KIND)

    async def _remove(
        self, kind: str, name: str, expected_revision: int | None, *, group: bool
    ) -> KvObject[Any, Any]:
        object_class(kind)
        expected = "" if expected_revision is None else str(expected_revision)
        args: list[EncodableT] = [
            self._prefix,
            self._maxlen,
            kind,
            name,
            expected,
            "1" if group else "",
            Partition.kind,
            Topic.kind,
        ]
        reply = await self._write(self._delete, args, "delete")
        check_write(reply, kind, name, expected_revision)
        return decode_object(kind, *reply[1:5])

    # -- consumer groups -------------------------------------------------------------

    async def publish_group_plan(
        self,
        name: str,
        status: Any,
        owners: Mapping[TopicPartition, Grant],
        expected_revision: int,
        *,
        kind: str = GROUP_KIND,
    ) -> KvObject[Any, Any]:
        model = coerce_part(kind, "status", status)
        checked = g.check_owners(owners)
        args: list[EncodableT] = [
            self._prefix,
            self._maxlen,
            kind,
            name,
            to_json(model),
            str(expected_revision),
        ]
        args += owner_fields(checked)
        reply = await self._write(self._publish, args, "publish_plan")
        check_write(reply, kind, name, expected_revision)
        return decode_object(kind, *reply[1:5])

    async def fetch_group_owners(self, name: str) -> dict[TopicPartition, Grant]:
        g.check_group_name(name)
        key = self._keys.group(name, "own")
        rows = await self._call(lambda: self._redis.hgetall(key), "fetch_owners")
        return {g.parse_field(text(f)): g.parse_grant(text(v)) for f, v in rows.items()}

    async def commit_group_offsets(
        self, name: str, member_id: str, commits: Collection[OffsetCommit]
    ) -> list[CommitResult]:
        g.check_group_name(name)
        g.check_member_id(member_id)
        checked = g.check_commits(commits)
        if not checked:
            return []
        ts_ms = time.time_ns() // 1_000_000
        args: list[EncodableT] = [self._prefix, name, member_id, Partition.kind]
        args += commit_fields(checked, ts_ms)
        reply = await self._commits.call([self._fence_arg(), *args])
        self._check_deposed(reply)
        return commit_results(checked, reply)

    async def write_group_offsets(
        self,
        name: str,
        offsets: Mapping[TopicPartition, int],
        *,
        metadata: str = "",
        kind: str = GROUP_KIND,
    ) -> None:
        g.check_group_name(name)
        checked = g.check_offsets(offsets)
        g.check_metadata(metadata)
        object_class(kind)
        ts_ms = time.time_ns() // 1_000_000
        args: list[EncodableT] = [self._prefix, kind, name, Partition.kind]
        args += offset_fields(checked, ts_ms, metadata)
        reply = await self._write(self._write_offsets, args, "write_offsets")
        check_offsets_write(reply, name)

    async def fetch_group_offsets(
        self, name: str, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, StoredOffset]:
        g.check_group_name(name)
        key = self._keys.group(name, "off")
        if partitions is None:
            rows = await self._call(lambda: self._redis.hgetall(key), "fetch_offsets")
            return {g.parse_field(text(f)): g.parse_offset(text(v)) for f, v in rows.items()}
        wanted = g.check_partitions(partitions)
        if not wanted:
            return {}
        fields = [g.field(*tp) for tp in wanted]
        values = await self._call(lambda: self._redis.hmget(key, fields), "fetch_offsets")
        return {tp: g.parse_offset(text(v)) for tp, v in zip(wanted, values, strict=True) if v}

    async def delete_group_offsets(self, name: str, topic: str | None = None) -> int:
        g.check_group_name(name)
        if topic is not None:
            g.check_topic(topic)
        args: list[EncodableT] = [self._prefix, name, topic or ""]
        reply = await self._write(self._delete_offsets, args, "delete_offsets")
        if reply[0] == "busy":
            raise GroupNotEmptyError(f"group {name!r} holds grants: offsets not deleted")
        return int(reply[1])

    async def delete_group(
        self, name: str, expected_revision: int | None = None, *, kind: str = GROUP_KIND
    ) -> KvObject[Any, Any]:
        return await self._remove(kind, name, expected_revision, group=True)

    # -- watch ---------------------------------------------------------------------

    def watch(self, kinds: KindFilter, from_revision: int) -> AsyncIterator[WatchEvent]:
        names = watched_kinds(kinds)
        if from_revision < 0:
            raise ValueError("from_revision must be >= 0")
        return self._feed.watch(names, from_revision)

    async def close(self) -> None:
        self._closed = True
        await close_client(self._redis)
