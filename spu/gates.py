"""Delivery gates: which member of a consumer group a partition's leader lets fetch it.

Theory of operation (seed ``004``: "the gate is the correctness backstop, the plan is
advisory"; brief ``CONSUMER_GROUPS.md`` sections 4.5-4.7). The SC computes each group's
plan and sends this SPU, for every partition it leads, one ``GateUpdate`` per group:
the member granted the partition (``None``: nobody, the gate is closed), the member's
grant epoch (the generation at which it got the partition) and the plan's generation.
``GateTable`` holds them, keyed by (group, topic, partition), and answers every group
fetch with ``check``, a dict lookup:

- **fail closed**: no entry means no fetch (``GateNotReadyError``, retriable: the gate
  comes with the plan or the leader change). Nothing ever falls back to "open";
- **exclusive**: only the entry's member at the entry's grant epoch is admitted; another
  member, a closed gate or a stale grant epoch is ``FencedMemberError`` (the member drops
  the partition and rejoins);
- **stale plans are ignored**: an update older than the newest generation this table
  applied for the group is ignored (reported in ``ApplyResult.ignored``); an equal one
  is applied again; a newer one replaces the entry;
- **versions**: an entry's ``version`` changes (a table-wide counter) whenever what it
  admits changes (member or grant epoch), so a stream opened under one version ends
  (``check(..., version=)``) when its gate changes. A newer generation that keeps the
  member and grant epoch keeps the version: a plan change elsewhere in the group does
  not interrupt the partitions that stayed;
- **leadership**: gates live only on a partition's leader; a deposed leader drops its
  gates for the partition (``drop_partition``), a deleted group goes with ``drop_group``.

Every change is appended to a bounded audit ring (``spu.gate_audit``) from which tests
check that no two grants of a partition were ever admitted at once (Z1).

The table is pure state (no I/O, no asyncio): the shell applies the SC's pushes and
wakes the streams of the gates that changed (``ApplyResult.changed``, the keys
``drop_*`` return). ``docs/consumer-groups.md`` ("Delivery gates") says how.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NoReturn

from spark_stream.errors import FencedMemberError, GateNotReadyError, InvalidRequestError
from spu.gate_audit import AuditLog, ChangeCause, GateChange, GateKey

__all__ = [
    "DEFAULT_AUDIT_SIZE",
    "ApplyResult",
    "Gate",
    "GateKey",
    "GateTable",
    "GateUpdate",
]

DEFAULT_AUDIT_SIZE = 10_000
"""Gate changes the audit ring keeps (a few hundred bytes each)."""


@dataclass(frozen=True, slots=True)
class GateUpdate:
    """One gate of one group's plan, as the SC sends it (``UPDATE_GATES``).

    Attributes:
        group, topic, partition: the gate.
        member: the member granted the partition; ``None``: nobody (closed).
        grant_epoch: the generation at which ``member`` got the partition.
        generation: the plan's generation.

    Raises:
        InvalidRequestError: a field out of range, named.
    """

    group: str
    topic: str
    partition: int
    member: str | None
    grant_epoch: int
    generation: int

    def __post_init__(self) -> None:
        for name in ("group", "topic"):
            if not getattr(self, name):
                raise InvalidRequestError(f"gate update: {name} must not be empty")
        if self.member == "":
            raise InvalidRequestError("gate update: member must be a member id or None")
        for name in ("partition", "grant_epoch", "generation"):
            if getattr(self, name) < 0:
                raise InvalidRequestError(
                    f"gate update: {name} must be >= 0, got {getattr(self, name)}"
                )
        if self.grant_epoch > self.generation:
            raise InvalidRequestError(
                f"gate update: grant_epoch {self.grant_epoch} is newer than "
                f"the plan's generation {self.generation}"
            )

    @property
    def key(self) -> GateKey:
        """The gate this update is for."""
        return (self.group, self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class Gate:
    """What one gate admits now.

    Attributes:
        member: the admitted member; ``None``: nobody (closed).
        grant_epoch: the grant epoch a fetch must carry.
        generation: the plan generation the entry came from.
        version: changes whenever ``member`` or ``grant_epoch`` does (table-wide
            counter, so a dropped and re-created entry never repeats a version).
    """

    member: str | None
    grant_epoch: int
    generation: int
    version: int


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """What ``GateTable.apply`` did.

    Attributes:
        changed: gates whose admission changed (new version): wake their streams.
        ignored: updates older than the group's applied generation, left out.
    """

    changed: tuple[GateKey, ...] = ()
    ignored: tuple[GateUpdate, ...] = ()


class GateTable:
    """The delivery gates of the partitions this SPU leads, with their audit ring.

    Args:
        spu: this SPU's id (named in the audit log).
        audit_size: how many changes the audit ring keeps (oldest dropped first).
        clock: the monotonic clock of the audit, in ns.
        on_change: also called with every change (e.g. ``gate_audit.AuditFile``).

    Raises:
        InvalidRequestError: ``audit_size`` below 1.
    """

    def __init__(
        self,
        spu: int = 0,
        audit_size: int = DEFAULT_AUDIT_SIZE,
        clock: Callable[[], int] = time.monotonic_ns,
        on_change: Callable[[GateChange], None] | None = None,
    ) -> None:
        if audit_size < 1:
            raise InvalidRequestError(f"audit_size must be >= 1, got {audit_size}")
        self.spu = spu
        self._clock = clock
        self._on_change = on_change
        self.rejections: dict[str, int] = {"not_ready": 0, "fenced": 0}
        """Group fetches refused, per reason (for the SPU's metrics)."""
        self.group_rejections: dict[str, dict[str, int]] = {}
        """The same per group, for groups this table applied a plan of (the heartbeat
        reports them; bounded by the groups the SC sent, dropped with the group)."""
        self._gates: dict[GateKey, Gate] = {}
        # The newest generation applied per group: the stale-plan fence and the heartbeat.
        self._generations: dict[str, int] = {}
        # (topic, partition) -> groups with a gate there, so a drop needs no scan.
        self._by_partition: dict[tuple[str, int], set[str]] = {}
        self._audit: deque[GateChange] = deque(maxlen=audit_size)
        self._dropped = 0
        self._version = 0

    # -- reads ---------------------------------------------------------------------

    def check(
        self,
        group: str,
        topic: str,
        partition: int,
        member_id: str,
        grant_epoch: int,
        *,
        version: int | None = None,
    ) -> Gate:
        """Admit a group fetch, or say why not. One dict lookup.

        Args:
            group, topic, partition: the gate.
            member_id, grant_epoch: who fetches, under which grant.
            version: for a stream, the version it opened under: any change since ends it.

        Returns:
            The gate that admitted the fetch (a stream keeps its ``version``).

        Raises:
            GateNotReadyError: no gate here yet, or an older one than the member's grant
                (retriable: the SC's update is on its way).
            FencedMemberError: the gate is closed, admits another member or another
                grant epoch, or changed since ``version``.
        """
        gate = self._gates.get((group, topic, partition))
        if (
            gate is not None
            and gate.member == member_id
            and gate.grant_epoch == grant_epoch
            and (version is None or gate.version == version)
        ):
            return gate  # the hot path: one lookup, a few compares
        try:
            self._refuse(gate, group, topic, partition, member_id, grant_epoch, version)
        except GateNotReadyError:
            self._count(group, "not_ready")
            raise
        except FencedMemberError:
            self._count(group, "fenced")
            raise

    def _count(self, group: str, reason: str) -> None:
        self.rejections[reason] += 1
        if group in self._generations:
            counts = self.group_rejections.setdefault(group, {"not_ready": 0, "fenced": 0})
            counts[reason] += 1

    @staticmethod
    def _refuse(
        gate: Gate | None,
        group: str,
        topic: str,
        partition: int,
        member_id: str,
        grant_epoch: int,
        version: int | None,
    ) -> NoReturn:
        """Raise why ``check`` does not admit the fetch."""
        where = f"group {group!r} on {topic}-{partition}"
        if gate is None:
            raise GateNotReadyError(
                f"{where}: this leader has no delivery gate yet and fails closed; "
                "retry once the SC's plan arrives"
            )
        if gate.member == member_id and gate.grant_epoch == grant_epoch:
            raise FencedMemberError(
                f"{where}: the gate changed since the stream opened "
                f"(version {version} -> {gate.version})"
            )
        if grant_epoch > gate.generation:
            raise GateNotReadyError(
                f"{where}: member {member_id}'s grant epoch {grant_epoch} is newer than "
                f"this leader's gate (generation {gate.generation}); retry once it arrives"
            )
        if gate.member is None:
            why = "the gate is closed"
        elif gate.member != member_id:
            why = "the partition is granted to another member"
        else:
            why = f"grant epoch {grant_epoch} is stale (the gate holds {gate.grant_epoch})"
        raise FencedMemberError(
            f"{where}: member {member_id} is not admitted: {why} (generation {gate.generation})"
        )

    def gate(self, group: str, topic: str, partition: int) -> Gate | None:
        """The gate's entry, or ``None`` when this SPU has none."""
        return self._gates.get((group, topic, partition))

    def applied_generation(self, group: str) -> int | None:
        """The newest plan generation applied here for ``group`` (the heartbeat report)."""
        return self._generations.get(group)

    def applied_generations(self) -> dict[str, int]:
        """``applied_generation`` of every group this table has seen."""
        return dict(self._generations)

    def __len__(self) -> int:
        return len(self._gates)

    # -- changes -------------------------------------------------------------------

    def apply(self, updates: Iterable[GateUpdate]) -> ApplyResult:
        """Apply the SC's updates in order (stale ones ignored, see the module doc)."""
        changed: dict[GateKey, None] = {}
        ignored: list[GateUpdate] = []
        for update in updates:
            applied = self._generations.get(update.group, -1)
            if update.generation < applied:
                ignored.append(update)
                continue
            self._generations[update.group] = update.generation
            key = update.key
            old = self._gates.get(key)
            if old is not None and (old.member, old.grant_epoch) == (
                update.member,
                update.grant_epoch,
            ):
                if old.generation == update.generation:
                    continue  # re-applied as it was: nothing changes
                gate = Gate(update.member, update.grant_epoch, update.generation, old.version)
            else:
                self._version += 1
                gate = Gate(update.member, update.grant_epoch, update.generation, self._version)
                changed[key] = None
            self._gates[key] = gate
            self._by_partition.setdefault((update.topic, update.partition), set()).add(update.group)
            self._record(key, gate, "apply")
        return ApplyResult(tuple(changed), tuple(ignored))

    def drop_partition(self, topic: str, partition: int) -> list[GateKey]:
        """Drop every group's gate for a partition this SPU stopped leading.

        Returns:
            The gates dropped (their streams end).
        """
        groups = self._by_partition.pop((topic, partition), set())
        keys = [(group, topic, partition) for group in sorted(groups)]
        for key in keys:
            self._drop(key, "drop_partition")
        return keys

    def drop_group(self, group: str) -> list[GateKey]:
        """Forget a deleted group: its gates and its applied generation.

        Returns:
            The gates dropped (their streams end).
        """
        keys = sorted(key for key in self._gates if key[0] == group)
        for key in keys:
            self._drop(key, "drop_group")
            groups = self._by_partition[(key[1], key[2])]
            groups.discard(group)
            if not groups:
                del self._by_partition[(key[1], key[2])]
        self._generations.pop(group, None)
        self.group_rejections.pop(group, None)
        return keys

    # -- audit ---------------------------------------------------------------------

    def audit_log(self, ended_ns: int | None = None) -> AuditLog:
        """The audit ring's content (for ``spu.gate_audit.overlapping_grants``).

        Args:
            ended_ns: when this table stopped serving, if it did.
        """
        return AuditLog(self.spu, tuple(self._audit), self._dropped, ended_ns)

    def _drop(self, key: GateKey, cause: ChangeCause) -> None:
        gate = self._gates.pop(key)
        self._record(key, Gate(None, gate.grant_epoch, gate.generation, gate.version), cause)

    def _record(self, key: GateKey, gate: Gate, cause: ChangeCause) -> None:
        if len(self._audit) == self._audit.maxlen:
            self._dropped += 1
        group, topic, partition = key
        change = GateChange(
            self._clock(),
            group,
            topic,
            partition,
            gate.member,
            gate.grant_epoch,
            gate.generation,
            cause,
        )
        self._audit.append(change)
        if self._on_change is not None:
            self._on_change(change)
