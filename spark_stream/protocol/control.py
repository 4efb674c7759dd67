"""Control-plane messages: the SC's public api (9003) and its private SPU api (9004).

Theory of operation. Cluster objects travel as their models' ``to_dict()`` (camelCase
maps) inside the meta of typed messages; helpers on each message turn them back into
models, so bad input surfaces as ``InvalidConfigError`` naming the field (or
``InvalidRequestError`` for a malformed envelope).

Private api (SPU <-> SC), one connection per SPU:

1. The SPU opens an ``SPU_CONNECT`` stream with ``SpuConnectRequest`` (id, token, the
   endpoints it actually bound).
2. The SC answers with pushes on that stream for as long as the connection lives: first
   ``SpuConnectAccepted``, then a full ``UpdateSpus`` and a full ``UpdateReplicas``, then
   incremental ones as specs and leaders change. Every push carries the KV ``revision`` it
   reflects; each replica entry carries its partition's own revision, so an SPU ignores
   an incremental entry older than what it holds. A full push replaces everything.
   Each entry also carries the partition's ``uid``: a re-created topic's partitions keep
   their names but not their uids. The SPU lists the replica directories it has on disk
   in ``SpuConnectRequest.stored``; ``UpdateReplicas.purge`` names those (and, to every
   SPU, each partition deleted later) whose storage must go. It also reports the
   metadata it keeps of each replica (``SpuConnectRequest.replica_meta``, written with
   ``SpuConnectAccepted.store_id``): an SC whose store forgot those partitions rebuilds
   them from it instead of purging them (``sc.rebuild``).
3. The SPU sends ``UpdateLrsRequest`` (live replica status of the replicas it leads) and
   ``HeartbeatRequest`` as plain requests on the same connection. Silence longer than
   ``heartbeat_timeout_s`` (from ``SpuConnectAccepted``) makes the SC drop the SPU.

Public api (clients, admin): request/response pairs for topics, partitions, SPUs and SPU
groups, the ``WATCH_METADATA`` stream of ``MetadataUpdate`` pushes (a full snapshot
first, then changes), resumable from a revision, and the consumer-group apis (``_groups``: the
``GROUP_JOIN`` member stream, heartbeats, commits, admin). The layouts are in ``docs/protocol.md``.
"""

from __future__ import annotations

from spark_stream.protocol._control_private import (
    HeartbeatRequest,
    HeartbeatResponse,
    LrsStatus,
    Replica,
    ReplicaId,
    ReplicaMeta,
    SpuConnectAccepted,
    SpuConnectRequest,
    UpdateLrsRequest,
    UpdateLrsResponse,
    UpdateReplicas,
    UpdateSpus,
)
from spark_stream.protocol._control_public import (
    AddPartitionsRequest,
    AddPartitionsResponse,
    AuthenticateRequest,
    AuthenticateResponse,
    CreateSpuGroupRequest,
    CreateSpuGroupResponse,
    CreateTopicRequest,
    CreateTopicResponse,
    DeleteSpuGroupRequest,
    DeleteSpuGroupResponse,
    DeleteTopicRequest,
    DeleteTopicResponse,
    DescribeTopicRequest,
    DescribeTopicResponse,
    ElectPreferredRequest,
    ElectPreferredResponse,
    ListPartitionsRequest,
    ListPartitionsResponse,
    ListSpuGroupsRequest,
    ListSpuGroupsResponse,
    ListSpusRequest,
    ListSpusResponse,
    ListTopicsRequest,
    ListTopicsResponse,
    MetadataUpdate,
    RegisterSpuRequest,
    RegisterSpuResponse,
    UnregisterSpuRequest,
    UnregisterSpuResponse,
    UpdateTopicSchemaRequest,
    UpdateTopicSchemaResponse,
    WatchMetadataRequest,
)
from spark_stream.protocol._groups import (
    RESET_MODES,
    DeleteGroupRequest,
    DeleteGroupResponse,
    DeleteOffsetsRequest,
    DeleteOffsetsResponse,
    DescribeGroupRequest,
    DescribeGroupResponse,
    GroupAssignment,
    GroupHeartbeatRequest,
    GroupHeartbeatResponse,
    GroupJoinRequest,
    GroupLeaveRequest,
    GroupLeaveResponse,
    GroupReleaseRequest,
    GroupReleaseResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    ProgressCommitRequest,
    ProgressCommitResponse,
    ResetOffsetsRequest,
    ResetOffsetsResponse,
    grant_list,
    tp_list,
)

__all__ = [
    # private: SPU <-> SC
    "Replica",
    "ReplicaId",
    "ReplicaMeta",
    "LrsStatus",
    "SpuConnectRequest",
    "SpuConnectAccepted",
    "UpdateSpus",
    "UpdateReplicas",
    "UpdateLrsRequest",
    "UpdateLrsResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    # public: clients and admin
    "AuthenticateRequest",
    "AuthenticateResponse",
    "CreateTopicRequest",
    "CreateTopicResponse",
    "DeleteTopicRequest",
    "DeleteTopicResponse",
    "ListTopicsRequest",
    "ListTopicsResponse",
    "DescribeTopicRequest",
    "DescribeTopicResponse",
    "ListPartitionsRequest",
    "ListPartitionsResponse",
    "AddPartitionsRequest",
    "AddPartitionsResponse",
    "ElectPreferredRequest",
    "ElectPreferredResponse",
    "UpdateTopicSchemaRequest",
    "UpdateTopicSchemaResponse",
    "RegisterSpuRequest",
    "RegisterSpuResponse",
    "UnregisterSpuRequest",
    "UnregisterSpuResponse",
    "ListSpusRequest",
    "ListSpusResponse",
    "CreateSpuGroupRequest",
    "CreateSpuGroupResponse",
    "DeleteSpuGroupRequest",
    "DeleteSpuGroupResponse",
    "ListSpuGroupsRequest",
    "ListSpuGroupsResponse",
    "WatchMetadataRequest",
    "MetadataUpdate",
    # consumer groups: members and admin (SC public)
    "GroupJoinRequest",
    "GroupAssignment",
    "GroupHeartbeatRequest",
    "GroupHeartbeatResponse",
    "GroupReleaseRequest",
    "GroupReleaseResponse",
    "GroupLeaveRequest",
    "GroupLeaveResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "DescribeGroupRequest",
    "DescribeGroupResponse",
    "DeleteGroupRequest",
    "DeleteGroupResponse",
    "RESET_MODES",
    "ResetOffsetsRequest",
    "ResetOffsetsResponse",
    "DeleteOffsetsRequest",
    "DeleteOffsetsResponse",
    "ProgressCommitRequest",
    "ProgressCommitResponse",
    "tp_list",
    "grant_list",
]
