"""The gate audit: what a gate table records of each change, and the Z1 check over it.

Theory of operation (brief ``CONSUMER_GROUPS.md`` section 4.1, Z1: "for each (group,
topic, partition), the intervals during which the leader SPU's gate admits a member
never overlap"). Every change of a gate (``spu.gates.GateTable``) appends one
``GateChange``: when (``t_ns``), which gate, and what it admits from then on (a member
and its grant epoch, or nobody). An ``AuditLog`` is one table's changes, in order, from
one SPU process. From the logs of one or more SPUs ``overlapping_grants``:

1. rebuilds each log's **admissions**: the half-open intervals ``[start, end)`` during
   which one grant (member, grant epoch) was admitted for one gate, ending at the next
   change of that gate in the same log (a new grant, a close, a drop) or at the log's
   ``ended_ns`` (the process stopped: its gates went with it), open-ended otherwise;
2. reports every pair of admissions of the same gate, on any SPUs, whose intervals
   overlap **and whose grants differ**. Two SPUs admitting the same grant at once (the
   deposed and the new leader during a leader change) is not an overlap: one member
   fetches from both, nobody else does.

Within one log admissions never overlap (a table holds one entry per gate), so every
overlap found crosses SPUs: a deposed leader still admitting a member after the new
leader admitted another.

**Clocks.** ``t_ns`` is ``time.monotonic_ns()``, CLOCK_MONOTONIC on Linux: one clock per
boot of a host, shared by its processes, so logs of SPU processes on **one host** compare
(the local cluster, the integration tests). Logs from several hosts, or from before and
after a reboot, do not: their clocks have unrelated origins and the verdict would mean
nothing. Comparing those needs a logical order (leader epochs), not a clock.

**Completeness.** A ring that dropped its oldest changes (``AuditLog.dropped``) no longer
knows what was admitted before its first entry; the check refuses such a log rather than
miss an overlap. A SIGKILLed SPU's ring dies with it: a test that kills SPUs keeps their
logs elsewhere (the wiring step streams them) and sets ``ended_ns`` to the kill time.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from spark_stream.errors import InvalidRequestError

__all__ = [
    "Admission",
    "AuditFile",
    "read_audit_file",
    "AuditLog",
    "ChangeCause",
    "GateChange",
    "GateKey",
    "Overlap",
    "admissions",
    "overlapping_grants",
]

GateKey = tuple[str, str, int]
"""A gate's identity: (group, topic, partition)."""

ChangeCause = Literal["apply", "drop_partition", "drop_group"]
"""Why a gate changed: a plan's update, this SPU lost the partition, the group went."""


@dataclass(frozen=True, slots=True)
class GateChange:
    """One change of one gate, as the audit ring keeps it.

    Attributes:
        t_ns: when, on the SPU's monotonic clock (ns).
        group, topic, partition: the gate.
        member: the member admitted from now on; ``None``: nobody (closed or dropped).
        grant_epoch: that member's grant epoch (for a drop, the dropped entry's).
        generation: the plan generation of the entry (for a drop, the dropped entry's).
        cause: why it changed.
    """

    t_ns: int
    group: str
    topic: str
    partition: int
    member: str | None
    grant_epoch: int
    generation: int
    cause: ChangeCause = "apply"

    @property
    def key(self) -> GateKey:
        """The gate this change is about."""
        return (self.group, self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class AuditLog:
    """The audit of one gate table (one SPU process), oldest change first.

    Attributes:
        spu: the SPU's id, to name it in reports.
        changes: the changes, in the order the table made them.
        dropped: how many older changes the bounded ring discarded (0: complete).
        ended_ns: when the process stopped (its gates closed then); ``None``: running.
    """

    spu: int
    changes: tuple[GateChange, ...]
    dropped: int = 0
    ended_ns: int | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    """One grant admitted by one SPU's gate during ``[start_ns, end_ns)``.

    ``end_ns`` is ``None`` while the grant is still admitted at the end of the log.
    """

    spu: int
    group: str
    topic: str
    partition: int
    member: str
    grant_epoch: int
    start_ns: int
    end_ns: int | None

    @property
    def grant(self) -> tuple[str, int]:
        """What is admitted: (member, grant epoch)."""
        return (self.member, self.grant_epoch)

    def overlaps(self, other: Admission) -> bool:
        """Whether the two half-open intervals share an instant."""
        return (other.end_ns is None or self.start_ns < other.end_ns) and (
            self.end_ns is None or other.start_ns < self.end_ns
        )

    def __str__(self) -> str:
        end = "..." if self.end_ns is None else str(self.end_ns)
        return (
            f"SPU {self.spu} admitted {self.member} (grant epoch {self.grant_epoch}) "
            f"during [{self.start_ns}, {end})"
        )


@dataclass(frozen=True, slots=True)
class Overlap:
    """Two different grants admitted for the same gate at the same time (a Z1 breach)."""

    first: Admission
    second: Admission

    def __str__(self) -> str:
        a = self.first
        return f"group {a.group!r} on {a.topic}-{a.partition}: {a} and {self.second}"


def admissions(log: AuditLog) -> list[Admission]:
    """The admission intervals one log records, in order of their start.

    Raises:
        InvalidRequestError: the log is incomplete (its ring dropped changes) or its
            clock goes backwards (it is not one process's log).
    """
    if log.dropped:
        raise InvalidRequestError(
            f"the gate audit of SPU {log.spu} lost its {log.dropped} oldest changes "
            "(the ring is full): what was admitted before them is unknown; "
            "raise the audit size"
        )
    opened: dict[GateKey, tuple[str, int, int]] = {}  # key -> (member, grant epoch, start)
    out: list[Admission] = []
    last_t: int | None = None
    for change in log.changes:
        if last_t is not None and change.t_ns < last_t:
            raise InvalidRequestError(
                f"the gate audit of SPU {log.spu} goes back in time at {change.t_ns} "
                f"(after {last_t}): not one process's monotonic log"
            )
        last_t = change.t_ns
        key = change.key
        held = opened.get(key)
        if held is not None and held[:2] == (change.member, change.grant_epoch):
            continue  # the same grant goes on (a newer generation that kept it)
        if held is not None:
            out.append(_admission(log.spu, key, held, change.t_ns))
            del opened[key]
        if change.member is not None:
            opened[key] = (change.member, change.grant_epoch, change.t_ns)
    if log.ended_ns is not None and last_t is not None and log.ended_ns < last_t:
        raise InvalidRequestError(
            f"the gate audit of SPU {log.spu} ends at {log.ended_ns}, "
            f"before its last change at {last_t}"
        )
    out.extend(_admission(log.spu, key, held, log.ended_ns) for key, held in opened.items())
    out.sort(key=lambda a: a.start_ns)
    return out


def overlapping_grants(logs: Iterable[AuditLog]) -> list[Overlap]:
    """Every pair of different grants admitted for one gate at overlapping times (Z1).

    Args:
        logs: the audit logs of the SPUs that led the partitions, from one host (see the
            module doc on clocks); several logs may come from one SPU id (restarts).

    Returns:
        The overlaps, ordered by gate and time; empty when Z1 held.

    Raises:
        InvalidRequestError: a log is incomplete or not monotonic (see ``admissions``).
    """
    by_gate: defaultdict[GateKey, list[Admission]] = defaultdict(list)
    for log in logs:
        for adm in admissions(log):
            by_gate[(adm.group, adm.topic, adm.partition)].append(adm)
    found: list[Overlap] = []
    for key in sorted(by_gate):
        # A sweep in start order: ``active`` holds the admissions not yet ended at the
        # current start; few ever are (one per leader SPU), so the pairs stay few.
        active: list[Admission] = []
        for adm in sorted(by_gate[key], key=lambda a: (a.start_ns, a.spu)):
            active = [a for a in active if a.end_ns is None or a.end_ns > adm.start_ns]
            found.extend(
                Overlap(a, adm) for a in active if a.grant != adm.grant and a.overlaps(adm)
            )
            active.append(adm)
    return found


def _admission(spu: int, key: GateKey, held: tuple[str, int, int], end_ns: int | None) -> Admission:
    member, grant_epoch, start = held
    return Admission(spu, key[0], key[1], key[2], member, grant_epoch, start, end_ns)


class AuditFile:
    """Appends each gate change as a JSON line to a file, so the audit outlives a SIGKILL.

    Opt-in (``SpuSettings.gate_audit_file``), for tests that kill SPUs: each line is
    written and flushed as the change happens (an SPU killed mid-line leaves a partial
    last line, which ``read_audit_file`` skips).

    Args:
        path: the file, created or appended to.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def __call__(self, change: GateChange) -> None:
        self._file.write(json.dumps(asdict(change)) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def read_audit_file(path: str | Path, spu: int, ended_ns: int | None = None) -> AuditLog:
    """The ``AuditLog`` an ``AuditFile`` wrote.

    Args:
        path: the file.
        spu: the SPU that wrote it.
        ended_ns: when that SPU stopped (e.g. the time it was killed).

    Raises:
        InvalidRequestError: a line other than the last one is not a gate change.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    changes: list[GateChange] = []
    for number, line in enumerate(lines, 1):
        try:
            changes.append(GateChange(**json.loads(line)))
        except (ValueError, TypeError) as exc:
            if number == len(lines):
                break  # the writer was killed mid-line
            raise InvalidRequestError(f"{path}:{number}: not a gate change: {exc}") from None
    return AuditLog(spu, tuple(changes), 0, ended_ns)
