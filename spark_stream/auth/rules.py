"""What each public api needs from a client token: one table, pure.

Every api served on the SC and SPU public ports has a row: the permissions it needs on
the topics its request names (``produce`` for a produce; ``consume`` for fetches,
streams, offsets and group membership; ``admin`` on the topic for topic changes and a
group's offsets of a topic), cluster admin (admin on ``*``) for SPUs, SPU groups and
group admin without a topic, or only a valid token (listings, descriptions and the
metadata watch: a client needs the cluster's layout to reach its leaders). An api
missing from the table needs cluster admin: a new api fails closed until it gets a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from spark_stream.auth.tokens import Claims, Permission
from spark_stream.protocol import ApiKey, Message, api_name

__all__ = ["Need", "RULES", "need_of", "check"]

P, C, A = Permission.PRODUCE, Permission.CONSUME, Permission.ADMIN


@dataclass(frozen=True, slots=True)
class Need:
    """What one request needs.

    Attributes:
        topics: (topic, permission) pairs, each checked.
        cluster_admin: admin on ``*`` is needed.
    """

    topics: tuple[tuple[str, Permission], ...] = ()
    cluster_admin: bool = False


ANY = Need()
"""A valid token, no permission."""
CLUSTER_ADMIN = Need(cluster_admin=True)


def _topic(permission: Permission, attr: str = "topic") -> Callable[[Message], Need]:
    """The need of a request naming one topic in ``attr`` (cluster admin when it is None)."""

    def need(msg: Message) -> Need:
        topic = getattr(msg, attr)
        return CLUSTER_ADMIN if topic is None else Need(((str(topic), permission),))

    return need


def _listed(permission: Permission, attr: str) -> Callable[[Message], Need]:
    """The need of a request naming topics in a list of names or of ``{"topic"}`` maps."""

    def need(msg: Message) -> Need:
        items: list[Any] = getattr(msg, attr) or []
        names = {i.get("topic") if isinstance(i, dict) else i for i in items}
        return Need(tuple((str(t), permission) for t in sorted(names, key=str) if t is not None))

    return need


def _fixed(value: Need) -> Callable[[Message], Need]:
    return lambda msg: value


RULES: Mapping[int, Callable[[Message], Need]] = MappingProxyType(
    {
        # SC public: topics
        ApiKey.CREATE_TOPIC: _topic(A, "name"),
        ApiKey.DELETE_TOPIC: _topic(A, "name"),
        ApiKey.ADD_PARTITIONS: _topic(A, "name"),
        ApiKey.UPDATE_TOPIC_SCHEMA: _topic(A, "name"),
        ApiKey.ELECT_PREFERRED: _fixed(CLUSTER_ADMIN),  # moves leaders of any topic
        ApiKey.LIST_TOPICS: _fixed(ANY),
        ApiKey.DESCRIBE_TOPIC: _fixed(ANY),
        ApiKey.LIST_PARTITIONS: _fixed(ANY),
        ApiKey.WATCH_METADATA: _fixed(ANY),
        # SC public: SPUs and SPU groups
        ApiKey.REGISTER_SPU: _fixed(CLUSTER_ADMIN),
        ApiKey.UNREGISTER_SPU: _fixed(CLUSTER_ADMIN),
        ApiKey.LIST_SPUS: _fixed(ANY),
        ApiKey.CREATE_SPU_GROUP: _fixed(CLUSTER_ADMIN),
        ApiKey.DELETE_SPU_GROUP: _fixed(CLUSTER_ADMIN),
        ApiKey.LIST_SPU_GROUPS: _fixed(ANY),
        # consumer groups: members (the join checks the topics; the session is its own)
        ApiKey.GROUP_JOIN: _listed(C, "topics"),
        ApiKey.GROUP_HEARTBEAT: _fixed(ANY),
        ApiKey.GROUP_RELEASE: _fixed(ANY),
        ApiKey.GROUP_LEAVE: _fixed(ANY),
        ApiKey.OFFSET_COMMIT: _listed(C, "commits"),
        ApiKey.OFFSET_FETCH: _listed(C, "partitions"),
        ApiKey.PROGRESS_COMMIT: _listed(C, "offsets"),
        # consumer groups: admin
        ApiKey.LIST_GROUPS: _fixed(ANY),
        ApiKey.DESCRIBE_GROUP: _fixed(ANY),
        ApiKey.DELETE_GROUP: _fixed(CLUSTER_ADMIN),
        ApiKey.RESET_OFFSETS: _topic(A),
        ApiKey.DELETE_OFFSETS: _topic(A),
        # SPU public
        ApiKey.PRODUCE: _topic(P),
        ApiKey.FETCH: _topic(C),
        ApiKey.STREAM_FETCH: _topic(C),
        ApiKey.FETCH_OFFSETS: _topic(C),
        ApiKey.FETCH_LOCAL: _topic(C),
    }
)
"""Api key -> the need of a decoded request of it."""


def need_of(api_key: int, msg: Message) -> Need:
    """What a request of ``api_key`` needs (cluster admin for an api without a row)."""
    rule = RULES.get(api_key)
    return CLUSTER_ADMIN if rule is None else rule(msg)


def check(claims: Claims, api_key: int, msg: Message) -> None:
    """Raise unless ``claims`` may make this request.

    Raises:
        PermissionDeniedError: naming the principal, the permission and the topic.
    """
    need = need_of(api_key, msg)
    if need.cluster_admin:
        claims.check_cluster_admin(api_name(api_key))
    for topic, permission in need.topics:
        claims.check(topic, permission)
