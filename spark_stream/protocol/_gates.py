"""Delivery gates on the wire: the SC's ``UPDATE_GATES`` push to partition leaders.

Theory of operation (``docs/consumer-groups.md``, "Delivery gates"; brief 4.7). The SC
derives from each consumer group's plan one gate per (group, topic, partition): the
member granted the partition (``None``: nobody, closed), its grant epoch and the plan's
generation, and pushes the gates of the partitions an SPU leads on that SPU's
``SPU_CONNECT`` stream as ``UpdateGates``:

- ``full=True`` after every (re)connect: ``gates`` holds every gate of the partitions
  the SPU leads and ``groups`` every group that exists; the SPU drops the groups it
  knows that are not in ``groups``;
- ``full=False`` on a plan change or a leader change (sent in the same batch as, and
  before, the ``UpdateReplicas`` that makes the SPU leader): ``gates`` changed,
  ``deleted_groups`` deleted.

The SPU applies gates before any replica update that follows them, so a new leader never
serves a group fetch without its gate (it fails closed with ``GateNotReadyError``).
The SPU reports the generation it applied per group in its heartbeat
(``HeartbeatRequest.applied_generations``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_stream.errors import InvalidRequestError
from spark_stream.protocol.api import ApiKey
from spark_stream.protocol.message import Message, Role, message

__all__ = ["GateEntry", "UpdateGates"]


@dataclass(frozen=True, slots=True)
class GateEntry:
    """One gate as it travels: who a partition's leader admits for one group.

    Attributes:
        group, topic, partition: the gate.
        member: the member admitted; ``None``: nobody (closed).
        grant_epoch: the generation at which ``member`` got the partition.
        generation: the plan's generation.
    """

    group: str
    topic: str
    partition: int
    member: str | None
    grant_epoch: int
    generation: int

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-ready map."""
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "member": self.member,
            "grant_epoch": self.grant_epoch,
            "generation": self.generation,
        }

    @classmethod
    def from_wire(cls, item: object) -> GateEntry:
        """Parse one map of ``UpdateGates.gates``.

        Raises:
            InvalidRequestError: not a map, or a field missing or of the wrong type, named.
        """
        if not isinstance(item, dict):
            raise InvalidRequestError(f"UpdateGates.gates: an entry must be a map, got {item!r}")
        for name in ("group", "topic"):
            if not isinstance(item.get(name), str):
                raise InvalidRequestError(f"UpdateGates.gates.{name} must be a string")
        for name in ("partition", "grant_epoch", "generation"):
            value = item.get(name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidRequestError(f"UpdateGates.gates.{name} must be an integer")
        member = item.get("member")
        if member is not None and not isinstance(member, str):
            raise InvalidRequestError("UpdateGates.gates.member must be a string or nil")
        return cls(
            item["group"],
            item["topic"],
            item["partition"],
            member,
            item["grant_epoch"],
            item["generation"],
        )


@message(ApiKey.UPDATE_GATES, Role.PUSH)
@dataclass(frozen=True, slots=True)
class UpdateGates(Message):
    """Delivery gates for the partitions an SPU leads (a push on ``SPU_CONNECT``).

    Attributes:
        full: True: the complete set (after a connect); False: changes only.
        gates: ``GateEntry.to_wire()`` maps.
        groups: with ``full``, every group that exists (the SPU drops the others).
        deleted_groups: groups deleted since the last push (the SPU drops their gates).
    """

    full: bool
    gates: list[dict[str, Any]] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    deleted_groups: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        full: bool,
        entries: list[GateEntry],
        groups: list[str] | None = None,
        deleted_groups: list[str] | None = None,
    ) -> UpdateGates:
        """The push from entries."""
        return cls(full, [e.to_wire() for e in entries], groups or [], deleted_groups or [])

    def entries(self) -> list[GateEntry]:
        """The gates as ``GateEntry`` values.

        Raises:
            InvalidRequestError: a malformed entry (nothing should be applied then).
        """
        return [GateEntry.from_wire(item) for item in self.gates]
