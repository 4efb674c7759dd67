"""Every api the system speaks, by number, and the versions this build understands.

Api keys are grouped by server and port so a number says where it belongs:

    1-99        common to every server (api versions, client authentication)
    1000-1999   SC public (9003): admin and metadata
    2000-2999   SC private (9004): SPU <-> SC
    3000-3999   SPU public (9005): producers and consumers
    4000-4999   SPU private (9006): SPU <-> SPU replication
    5000-5999   consumer groups (reserved; see seed 004)

A key is never reused or renumbered; a new layout of an existing api is a new version.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType

__all__ = ["ApiKey", "API_VERSIONS", "STREAM_APIS", "api_name"]


class ApiKey(IntEnum):
    """The numeric id of an api, carried in every frame header."""

    # Common
    API_VERSIONS = 1
    """Which api keys and versions the server handles; answered by every server."""
    AUTHENTICATE = 2
    """A client presents its token once per connection (SC and SPU public ports)."""

    # SC public
    CREATE_TOPIC = 1001
    DELETE_TOPIC = 1002
    LIST_TOPICS = 1003
    DESCRIBE_TOPIC = 1004
    LIST_PARTITIONS = 1005
    ADD_PARTITIONS = 1006
    """Add partitions to a topic (their count only grows)."""
    UPDATE_TOPIC_SCHEMA = 1007
    """Evolve a typed topic's schema: append nullable columns (a new version)."""
    ELECT_PREFERRED = 1008
    """Move partition leadership back to preferred replicas (admin)."""
    REGISTER_SPU = 1010
    """Register a custom SPU (admin), before it may connect."""
    UNREGISTER_SPU = 1011
    LIST_SPUS = 1012
    CREATE_SPU_GROUP = 1020
    DELETE_SPU_GROUP = 1021
    LIST_SPU_GROUPS = 1022
    WATCH_METADATA = 1030
    """Stream: the SC pushes metadata changes (SPUs, topics, partitions) from a revision."""

    # SC private
    SPU_CONNECT = 2001
    """Stream: an SPU presents its id and secret; the SC pushes its SPU and replica specs."""
    UPDATE_SPUS = 2002
    """Push on the SPU_CONNECT stream: SPU specs (all or changed)."""
    UPDATE_REPLICAS = 2003
    """Push on the SPU_CONNECT stream: replica (partition) specs for this SPU."""
    UPDATE_LRS = 2004
    """SPU -> SC: live replica status (leader, followers, LEO, HW) changes."""
    HEARTBEAT = 2005
    """SPU -> SC: liveness, and later consumer-group membership."""

    # SPU public
    PRODUCE = 3001
    FETCH = 3002
    STREAM_FETCH = 3003
    """Stream: the leader pushes batch frames as they become visible."""
    FETCH_OFFSETS = 3004
    FETCH_LOCAL = 3005
    """Where a fetch's frames lie in the leader's files, for a client on the same host."""

    # SPU private
    FOLLOWER_FETCH = 4001
    FOLLOWER_STREAM = 4002
    """Stream: the leader pushes frames for all replicas a follower SPU holds."""
    FOLLOWER_LEO = 4003
    """Follower -> leader: the follower's LEO per replica."""
    PEER_HELLO = 4004
    """Follower -> leader, first on a connection: its id and nonce; the leader's proof."""
    PEER_AUTH = 4005
    """Follower -> leader: the follower's proof; replication messages need it first."""

    # Consumer groups: members (SC public port)
    GROUP_JOIN = 5001
    """Stream: a member session; the SC pushes ``GroupAssignment``s."""
    GROUP_HEARTBEAT = 5002
    GROUP_RELEASE = 5003
    GROUP_LEAVE = 5004
    OFFSET_COMMIT = 5005
    OFFSET_FETCH = 5006
    # Consumer groups: admin (SC public port)
    LIST_GROUPS = 5010
    DESCRIBE_GROUP = 5011
    DELETE_GROUP = 5012
    RESET_OFFSETS = 5013
    DELETE_OFFSETS = 5014
    PROGRESS_COMMIT = 5015
    """Unfenced offsets of a progress-only group (a Spark query's ``progressGroup``)."""
    # Consumer groups: delivery gates
    UPDATE_GATES = 5020
    """Push on the SPU_CONNECT stream: delivery gates of the partitions the SPU leads."""


API_VERSIONS: Mapping[ApiKey, tuple[int, int]] = MappingProxyType(
    {key: (0, 0) for key in ApiKey}
    | {
        # Version 1: the consumer-group fields (group, member_id, grant_epoch);
        # version 2: leader_epoch (KIP-320), with or without them.
        ApiKey.FETCH: (0, 2),
        ApiKey.STREAM_FETCH: (0, 2),
        ApiKey.FETCH_LOCAL: (0, 2),
    }
)
"""The (lowest, highest) version of each api's message layout this build speaks."""

STREAM_APIS: frozenset[ApiKey] = frozenset(
    {
        ApiKey.WATCH_METADATA,
        ApiKey.SPU_CONNECT,
        ApiKey.STREAM_FETCH,
        ApiKey.FOLLOWER_STREAM,
        ApiKey.GROUP_JOIN,
    }
)
"""Apis opened with ``Connection.stream`` (a request answered by pushes)."""


def api_name(api_key: int) -> str:
    """The enum name of a key, or ``api <n>`` for a number this build does not know."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api {api_key}"
