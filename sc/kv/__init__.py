"""The SC's KV store: revisioned objects, compare-and-set writes, a resumable change feed.

``KvStore`` is the interface (see ``sc.kv.store`` for the theory of operation);
``RedisKvStore`` is the product, ``MemoryKvStore`` serves unit tests and embedded use.
Consumer groups keep their owner map and offsets beside the group object
(``sc.kv.groups``).
"""

from __future__ import annotations

from sc.kv.groups import (
    GROUP_KIND,
    CommitOutcome,
    CommitResult,
    Grant,
    OffsetCommit,
    StoredOffset,
    TopicPartition,
)
from sc.kv.memory import MemoryKvStore
from sc.kv.redis_store import RedisKvStore
from sc.kv.store import (
    DEFAULT_FEED_RETENTION,
    ChangeEvent,
    ChangeType,
    KindFilter,
    KvStore,
    Resync,
    WatchEvent,
)

__all__ = [
    "DEFAULT_FEED_RETENTION",
    "GROUP_KIND",
    "CommitOutcome",
    "CommitResult",
    "Grant",
    "OffsetCommit",
    "StoredOffset",
    "TopicPartition",
    "ChangeEvent",
    "ChangeType",
    "KindFilter",
    "KvStore",
    "MemoryKvStore",
    "RedisKvStore",
    "Resync",
    "WatchEvent",
]
