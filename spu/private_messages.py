"""Messages of the SPU private api (port 9006): follower replication between SPUs.

Theory of operation. A follower SPU holds one connection to each leader SPU it follows
and opens one ``FOLLOWER_STREAM`` on it for all the replicas it follows there:

0. The connection is authenticated first (``spark_stream.spu_identity``): the follower
   sends ``PeerHelloRequest`` (its id, the leader id it expects, a nonce), the leader
   answers with its nonce and its proof, the follower checks that proof and sends its
   own in ``PeerAuthRequest``. Any replication message before that, a wrong proof or an
   SPU the leader has no key for gets ``UnauthorizedError`` and the connection closes.

1. ``FollowerStreamRequest``: the follower's id and, per replica, where its log may start
   to differ from the leader's (``start``: the frame holding its high watermark), the
   ``(base offset, crc)`` of its frames from there (``tail``) and its LEO.
2. The leader answers each replica, once it leads it, with a ``FollowerPush`` carrying
   ``truncate_to`` (the end of the longest prefix of the follower's log that matches its
   own, ``reset`` when the follower must empty its log because the leader no longer holds
   those offsets), then pushes frames from there on as they are appended, and empty
   pushes when only the high watermark moved.
3. The follower appends the frames as they are (offsets kept) and reports its LEO per
   replica with ``FollowerLeoRequest`` after appending, and periodically when idle, so the
   leader can tell it is caught up. A push with ``error`` set (the leader lost the
   replica) makes the follower open a new stream, which syncs every replica again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_stream.errors import InvalidRequestError
from spark_stream.protocol import DEFAULT_FETCH_MAX_BYTES, ApiKey, Message, Role, Tail, message

__all__ = [
    "MAX_TAIL_SIGNATURE",
    "PeerHelloRequest",
    "PeerHelloResponse",
    "PeerAuthRequest",
    "PeerAuthResponse",
    "ReplicaOffsets",
    "FollowerStreamRequest",
    "FollowerPush",
    "FollowerLeoRequest",
    "FollowerLeoResponse",
]

MAX_TAIL_SIGNATURE = 1024
"""Most frames a follower lists per replica; past them it refetches."""


def _offset(replica: str, key: str, value: object) -> int:
    """``value`` as an offset (an integer >= 0, not a bool), or the error naming it."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidRequestError(f"replica {replica!r}.{key} must be an integer >= 0")
    return value


@dataclass(frozen=True, slots=True)
class ReplicaOffsets:
    """A follower's replica as it opens a stream.

    Attributes:
        leo: the follower's log end offset.
        start: offsets below it match the leader's (committed data); the tail from here
            on must be checked.
        tail: ``(base offset, crc)`` of the follower's frames from ``start``, ascending.
        repair_from: the follower cut its log here because a frame of it was damaged (bit
            rot) and fetches the rest again; ``None``: no repair. Optional on the wire.
    """

    leo: int
    start: int
    tail: tuple[tuple[int, int], ...] = ()
    repair_from: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-able map."""
        wire: dict[str, Any] = {
            "leo": self.leo,
            "start": self.start,
            "tail": [list(t) for t in self.tail],
        }
        if self.repair_from is not None:
            wire["repair"] = self.repair_from
        return wire

    @classmethod
    def from_wire(cls, name: str, data: Any) -> ReplicaOffsets:
        """Validate one replica entry of ``FollowerStreamRequest.replicas``.

        Raises:
            InvalidRequestError: naming the replica and the field.
        """
        if not isinstance(data, dict):
            raise InvalidRequestError(f"replica {name!r}: expected a map")
        leo = _offset(name, "leo", data.get("leo"))
        start = _offset(name, "start", data.get("start"))
        tail = data.get("tail", [])
        if start > leo:
            raise InvalidRequestError(f"replica {name!r}: start {start} is past its LEO {leo}")
        if not isinstance(tail, list) or len(tail) > MAX_TAIL_SIGNATURE:
            raise InvalidRequestError(
                f"replica {name!r}.tail must be a list of at most {MAX_TAIL_SIGNATURE} pairs"
            )
        pairs = []
        for item in tail:
            if (
                not isinstance(item, list | tuple)
                or len(item) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)
            ):
                raise InvalidRequestError(f"replica {name!r}.tail holds a bad pair {item!r}")
            pairs.append((int(item[0]), int(item[1])))
        repair = data.get("repair")
        repair_from = None if repair is None else _offset(name, "repair", repair)
        return cls(leo, start, tuple(pairs), repair_from)


@message(ApiKey.FOLLOWER_STREAM, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class FollowerStreamRequest(Message):
    """Open the replication stream for every replica the follower holds of this leader.

    Attributes:
        spu_id: the follower SPU.
        replicas: partition name -> ``ReplicaOffsets.to_wire()``.
        max_bytes: soft limit on the frames of one push.
    """

    spu_id: int
    replicas: dict[str, Any]
    max_bytes: int = DEFAULT_FETCH_MAX_BYTES

    def __post_init__(self) -> None:
        if self.spu_id < 0:
            raise InvalidRequestError(f"FollowerStreamRequest.spu_id {self.spu_id} is negative")
        if self.max_bytes <= 0:
            raise InvalidRequestError("FollowerStreamRequest.max_bytes must be > 0")

    @classmethod
    def build(
        cls,
        spu_id: int,
        replicas: dict[str, ReplicaOffsets],
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
    ) -> FollowerStreamRequest:
        """The request from typed offsets."""
        return cls(spu_id, {k: v.to_wire() for k, v in replicas.items()}, max_bytes)

    def offsets(self) -> dict[str, ReplicaOffsets]:
        """The replicas' offsets, validated (``InvalidRequestError`` naming the field)."""
        return {name: ReplicaOffsets.from_wire(name, v) for name, v in self.replicas.items()}


@message(ApiKey.FOLLOWER_STREAM, Role.PUSH)
@dataclass(frozen=True, slots=True)
class FollowerPush(Message):
    """One push of the replication stream, about one replica.

    Attributes:
        name: the partition.
        hw, leo, log_start: the leader's offsets when the push was made.
        truncate_to: first push of a replica: cut the log here before appending.
        reset: with ``truncate_to``: empty the log and start it at ``truncate_to``.
        error: an error code: the leader no longer serves this replica on this stream.
        message: what the error means.
        tail: frames to append as they are, possibly none.
    """

    name: str
    hw: int = 0
    leo: int = 0
    log_start: int = 0
    truncate_to: int | None = None
    reset: bool = False
    error: int | None = None
    message: str = ""
    tail: Tail = b""


@message(ApiKey.FOLLOWER_LEO, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class FollowerLeoRequest(Message):
    """A follower's LEO per replica it follows on this leader.

    Attributes:
        spu_id: the follower SPU.
        leos: partition name -> LEO.
    """

    spu_id: int
    leos: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.spu_id < 0:
            raise InvalidRequestError(f"FollowerLeoRequest.spu_id {self.spu_id} is negative")
        for name, leo in self.leos.items():
            if leo < 0:
                raise InvalidRequestError(f"FollowerLeoRequest.leos[{name!r}] is negative")


@message(ApiKey.FOLLOWER_LEO, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class FollowerLeoResponse(Message):
    """Which reports the leader could not take.

    Attributes:
        ignored: names this SPU does not lead with the reporter as a follower, or whose
            LEO was past the leader's.
    """

    ignored: list[str] = field(default_factory=list)


@message(ApiKey.PEER_HELLO, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class PeerHelloRequest(Message):
    """A follower opens the peer handshake.

    Attributes:
        spu_id: the follower SPU (who it claims to be).
        leader_id: the SPU it means to reach (a leader at another id refuses).
        nonce: the follower's fresh nonce.
    """

    spu_id: int
    leader_id: int
    nonce: bytes


@message(ApiKey.PEER_HELLO, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class PeerHelloResponse(Message):
    """The leader's nonce and its proof (``peer_proof(key, "leader", ...)``)."""

    nonce: bytes
    proof: bytes


@message(ApiKey.PEER_AUTH, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class PeerAuthRequest(Message):
    """The follower's proof (``peer_proof(key, "follower", ...)``) over both nonces."""

    spu_id: int
    proof: bytes


@message(ApiKey.PEER_AUTH, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class PeerAuthResponse(Message):
    """The connection now speaks for ``spu_id``."""

    spu_id: int
