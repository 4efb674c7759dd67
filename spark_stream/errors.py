"""Every error the system can raise or send over the wire, in one place.

Each error type has a numeric ``code`` (stable, carried in protocol replies) and a
``retriable`` flag (a client may refresh metadata and try again). ``error_for_code``
maps a code back to its type, so a server error arrives at the caller typed.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "FluvioError",
    "CorruptFrameError",
    "CorruptSegmentError",
    "LogGapError",
    "OffsetOutOfRangeError",
    "RecordTooLargeError",
    "UnknownTopicError",
    "UnknownPartitionError",
    "NotLeaderError",
    "NotEnoughReplicasError",
    "UnauthorizedError",
    "InvalidRequestError",
    "InvalidConfigError",
    "TopicExistsError",
    "RequestTimeoutError",
    "ConnectionClosedError",
    "ConflictError",
    "NotFoundError",
    "UnsupportedVersionError",
    "DuplicateSequenceError",
    "OutOfOrderSequenceError",
    "StorageError",
    "FencedLeaderEpochError",
    "UnknownLeaderEpochError",
    "OffsetNotAvailableError",
    "ObjectExistsError",
    "SchemaMismatchError",
    "KvUnavailableError",
    "ServerStartError",
    "NotActiveError",
    "InsufficientResourcesError",
    "PartitionOfflineError",
    "error_for_code",
]


class FluvioError(Exception):
    """Root of every error this project raises on purpose."""

    code: ClassVar[int] = 1
    retriable: ClassVar[bool] = False


class InvalidRequestError(FluvioError):
    """A request or option is malformed or contradictory."""

    code = 2


class CorruptFrameError(FluvioError):
    """Bytes that should hold a batch frame or protocol frame do not."""

    code = 3


class CorruptSegmentError(FluvioError):
    """A sealed segment file failed validation; its name is in the message."""

    code = 4


class LogGapError(FluvioError):
    """A replicated append would leave a gap or overlap in the log."""

    code = 5


class OffsetOutOfRangeError(FluvioError):
    """The requested offset is below the log start or above the end."""

    code = 6


class RecordTooLargeError(FluvioError):
    """A batch or record is larger than the configured limit."""

    code = 7


class UnknownTopicError(FluvioError):
    """The topic does not exist."""

    code = 8


class UnknownPartitionError(FluvioError):
    """The partition does not exist or is not hosted here."""

    code = 9
    retriable = True


class NotLeaderError(FluvioError):
    """This SPU is not the leader of the partition; refresh metadata and retry."""

    code = 10
    retriable = True


class NotEnoughReplicasError(FluvioError):
    """Fewer in-sync replicas than ``min_in_sync_replicas`` for ``acks=all``."""

    code = 11
    retriable = True


class UnauthorizedError(FluvioError):
    """The peer is not allowed to do this (unknown SPU, wrong secret, failed handshake).

    Also: an SPU presenting another SPU's secret, and Redis refusing the SC's password.
    """

    code = 12


class InvalidConfigError(FluvioError):
    """A spec or configuration value is invalid; the message names the field."""

    code = 13


class TopicExistsError(FluvioError):
    """A topic of that name already exists."""

    code = 14


class RequestTimeoutError(FluvioError):
    """The request did not complete in time."""

    code = 15
    retriable = True


class ConnectionClosedError(FluvioError):
    """The connection closed before the reply arrived."""

    code = 16
    retriable = True


class ConflictError(FluvioError):
    """A compare-and-set write lost against a newer revision."""

    code = 17
    retriable = True


class NotFoundError(FluvioError):
    """The named object does not exist."""

    code = 18


class UnsupportedVersionError(FluvioError):
    """The peer speaks an api key or version this side does not know."""

    code = 19


class DuplicateSequenceError(FluvioError):
    """An idempotent producer resent a batch that was already appended."""

    code = 20


class OutOfOrderSequenceError(FluvioError):
    """An idempotent producer skipped a sequence number."""

    code = 21


class StorageError(FluvioError):
    """The storage engine cannot complete the operation (I/O, closed log)."""

    code = 22


class FencedLeaderEpochError(FluvioError):
    """The request's leader epoch is older than this replica's: refresh metadata and retry.

    The partition has had a newer leader election than the requester knows of (KIP-320
    ``FENCED_LEADER_EPOCH``); a deposed leader answers this instead of serving.
    """

    code = 23
    retriable = True


class UnknownLeaderEpochError(FluvioError):
    """The request's leader epoch is newer than this replica's: it has not heard yet; retry.

    The SC's push of the election has not reached this SPU (KIP-320
    ``UNKNOWN_LEADER_EPOCH``); a short wait fixes it.
    """

    code = 24
    retriable = True


class OffsetNotAvailableError(FluvioError):
    """The leader's high watermark is not yet known to be current: retry shortly.

    A leader that just took over (a restart, a follower promoted) has a HW that may lag
    the one the previous leadership reported, until its followers' first fetches (Kafka's
    ``OFFSET_NOT_AVAILABLE``); it answers offset requests with this rather than a HW
    below one a reader may already have seen.
    """

    code = 26
    retriable = True


class SchemaMismatchError(InvalidRequestError):
    """Records do not match their typed topic's schema; the message names the column and types."""

    code = 25


class ObjectExistsError(ConflictError):
    """A KV create found an object of that kind and name already stored."""

    code = 50
    retriable = False


class KvUnavailableError(ConnectionClosedError):
    """The KV store (Redis) did not answer within the reconnect timeout."""

    code = 51


class ServerStartError(FluvioError):
    """A local server process (e.g. redis-server) failed to start or answer in time."""

    code = 52


class NotActiveError(FluvioError):
    """This SC is a standby (or was deposed): the message names the active SC, if known.

    Retriable: the caller reconnects to the active SC (``active_endpoints`` reads its
    addresses from the message) and sends the request again.
    """

    code = 53
    retriable = True


class InsufficientResourcesError(FluvioError):
    """Too few SPUs for a topic's replication factor; it waits unprovisioned until more join.

    Not retriable: a client retrying within its timeout cannot fix it, SPUs must be added.
    """

    code = 60


class PartitionOfflineError(FluvioError):
    """Every replica of a partition is on an offline or unregistered SPU: it has no leader.

    Not retriable: no election can pick a leader until one of those SPUs returns.
    """

    code = 61


class DataSourceOptionError(InvalidConfigError):
    """A Spark data source option is unknown, malformed or contradicts another; named."""

    code = 100


class DataLossError(OffsetOutOfRangeError):
    """Records a query must read are gone (retention passed them) and failOnDataLoss is on."""

    code = 101


class SinkSchemaError(InvalidRequestError):
    """A DataFrame written to a topic has columns the sink cannot map; the message names them."""

    code = 102


class JarFetchError(FluvioError):
    """A jar Spark needs (Delta's, the JVM connector's) could not be fetched or built."""

    code = 103


__all__ += ["DataSourceOptionError", "DataLossError", "SinkSchemaError", "JarFetchError"]


class SpuExistsError(ObjectExistsError):
    """An SPU with that id (or name) is registered, or the id is reserved by an SPU group."""

    code = 70


class ProvisionError(FluvioError):
    """A managed SPU could not be started or stopped by the provisioner."""

    code = 71


__all__ += ["SpuExistsError", "ProvisionError"]


class ClientClosedError(FluvioError):
    """The client, producer or consumer was closed before the operation completed."""

    code = 90


__all__ += ["ClientClosedError"]


# -- transport security (the 80-89 band) ----------------------------------------------


class TlsError(FluvioError):
    """A TLS connection could not be made: the server's certificate is not trusted (or
    does not name the host), the server requires a client certificate, or one side
    speaks TLS and the other does not. Not retriable: the certificates or the TLS
    settings must change."""

    code = 80


__all__ += ["TlsError"]


# -- consumer groups (seed 004; the 110-119 band) -----------------------------------


class UnknownGroupError(FluvioError):
    """No consumer group of that name."""

    code = 110


class UnknownMemberError(FluvioError):
    """The member id is not (or no longer) a member of the group: it must join again."""

    code = 111


class FencedMemberError(FluvioError):
    """A stale grant or member epoch: the partition or the membership moved on.

    Not retriable as is: the member drops what it holds and rejoins.
    """

    code = 112


class MemberIdConflictError(ConflictError):
    """A member id already live on another connection, or a second one on this one."""

    code = 113


class UnreleasedInstanceIdError(ConflictError):
    """A static member's instance id is held by another live member."""

    code = 114


class GroupNotEmptyError(ConflictError):
    """The group has live members: deleting it or resetting its offsets is refused."""

    code = 115


class GateNotReadyError(FluvioError):
    """The partition's leader has no delivery gate for the group yet: it fails closed.

    Retriable: the SC sends the gate with the plan or the leader change (10-50 ms).
    """

    code = 116
    retriable = True


__all__ += [
    "UnknownGroupError",
    "UnknownMemberError",
    "FencedMemberError",
    "MemberIdConflictError",
    "UnreleasedInstanceIdError",
    "GroupNotEmptyError",
    "GateNotReadyError",
]


# -- client authentication and authorisation (the 120-129 band) --------------------


class AuthenticationError(UnauthorizedError):
    """A client token is missing, malformed, expired or not signed by this cluster's key."""

    code = 120


class PermissionDeniedError(UnauthorizedError):
    """The client's token lacks the permission (produce, consume, admin) on the topic named."""

    code = 121


__all__ += ["AuthenticationError", "PermissionDeniedError"]


_BY_CODE: dict[int, type[FluvioError]] = {}


def _index(cls: type[FluvioError]) -> None:
    if cls.code in _BY_CODE and _BY_CODE[cls.code] is not cls:
        raise RuntimeError(f"duplicate error code {cls.code}")
    _BY_CODE[cls.code] = cls
    for sub in cls.__subclasses__():
        _index(sub)


_index(FluvioError)


def error_for_code(code: int, message: str = "") -> FluvioError:
    """Build the typed error for a wire ``code``; unknown codes become ``FluvioError``."""
    cls = _BY_CODE.get(code, FluvioError)
    err = cls(message or cls.__doc__ or cls.__name__)
    return err
