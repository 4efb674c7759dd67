"""Replica assignment: which SPUs hold each partition of a topic, leader first.

Theory of operation (the full write-up with a worked example is ``docs/assignment.md``):

- **Computed** assignment is a deterministic greedy fill. SPUs are put in a base order
  (by id; with racks, the rack-alternating order: one SPU of each rack in turn) and
  rotated by ``start_index``. Partitions are placed one after another. A partition's
  leader is the SPU with the fewest leaders so far (then fewest replicas, then base
  order); each follower is the SPU, not yet in the partition, whose rack the partition
  uses least, then with the fewest replicas, the least loaded rack, the most leaders
  (SPUs that still owe a leadership keep room for it), then the base-order distance
  after the leader plus a shift that grows every round (so follower pairs vary).
- That fill keeps leaders per SPU within one of each other for any topic, total replicas
  per SPU within one when racks are absent or equal in size, and a partition's replicas
  on distinct racks whenever there are at least as many racks as replicas.
- **Growth** (partitions added to a topic) runs the same fill, seeded with the loads of
  the topic's ``existing`` rows: those rows stay as they are and the new partitions go
  where the topic's leaders and replicas are fewest, so the grown topic is balanced as
  if it had been created with its new count (existing rows permitting).
- **Manual** assignment (the topic spec's replica assignment, e.g. from a file) is only
  validated: partitions ``0..n-1`` without gaps, each with the same number of distinct
  replicas, every SPU registered.

Everything here is pure: no store, no I/O. Results are values (``Assignment``,
``InsufficientSpus``, ``InvalidAssignment``) that the topic controller maps onto the
topic's status (``Provisioned``, ``InsufficientResources``, ``InvalidConfig``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_stream.errors import InsufficientResourcesError, InvalidConfigError

__all__ = [
    "SpuInfo",
    "Assignment",
    "InsufficientSpus",
    "InvalidAssignment",
    "AssignmentResult",
    "spu_sequence",
    "compute_assignment",
    "short_of_spus",
    "check_manual_assignment",
    "parse_assignment",
]


@dataclass(frozen=True, slots=True)
class SpuInfo:
    """What assignment needs to know about an SPU: its id and optional rack."""

    id: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    """A replica map: ``replicas[p]`` lists partition ``p``'s SPUs, leader first."""

    replicas: tuple[tuple[int, ...], ...]

    def replica_map(self) -> dict[int, tuple[int, ...]]:
        """The map in the topic status' shape: ``{partition: (leader, *followers)}``."""
        return dict(enumerate(self.replicas))

    @property
    def leaders(self) -> tuple[int, ...]:
        """Each partition's leader, by partition index."""
        return tuple(reps[0] for reps in self.replicas)


@dataclass(frozen=True, slots=True)
class InsufficientSpus:
    """Fewer SPUs than the replication factor: the topic waits (``InsufficientResources``)."""

    needed: int
    available: int

    @property
    def reason(self) -> str:
        """A one-line explanation for the topic status."""
        spus = "SPU" if self.needed == 1 else "SPUs"
        return (
            f"replication factor {self.needed} needs {self.needed} {spus}, "
            f"{self.available} registered"
        )

    def error(self) -> InsufficientResourcesError:
        """The typed error for callers that want to raise it."""
        return InsufficientResourcesError(self.reason)


@dataclass(frozen=True, slots=True)
class InvalidAssignment:
    """The request can never be satisfied as given (``InvalidConfig`` with ``reason``)."""

    reason: str

    def error(self) -> InvalidConfigError:
        """The typed error for callers that want to raise it."""
        return InvalidConfigError(self.reason)


AssignmentResult = Assignment | InsufficientSpus | InvalidAssignment


def _as_info(spu: SpuInfo | int) -> SpuInfo:
    return spu if isinstance(spu, SpuInfo) else SpuInfo(int(spu))


def spu_sequence(spus: Iterable[SpuInfo | int], *, ignore_rack: bool = False) -> tuple[int, ...]:
    """The base order of SPU ids that assignment walks.

    Without racks (or with ``ignore_rack``, or when any SPU lacks a rack) it is ascending
    id. With racks it is Kafka's rack-alternating list: racks sorted by name, SPUs in a
    rack by id, then one SPU from each rack in turn (``a0, b0, c0, a1, b1, ...``).

    Raises:
        InvalidConfigError: the same SPU id appears twice.
    """
    infos = sorted((_as_info(s) for s in spus), key=lambda s: s.id)
    ids = [s.id for s in infos]
    if len(set(ids)) != len(ids):
        raise InvalidConfigError(f"spus: duplicate SPU id in {ids}")
    if ignore_rack or not _rack_aware(infos):
        return tuple(ids)
    by_rack: dict[str, list[int]] = {}
    for info in infos:
        by_rack.setdefault(info.rack or "", []).append(info.id)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    depth = max(len(col) for col in columns)
    return tuple(col[row] for row in range(depth) for col in columns if row < len(col))


def _rack_aware(infos: Sequence[SpuInfo]) -> bool:
    # Racks count only when every SPU has one; a partial labelling is ignored (see docs).
    return bool(infos) and all(info.rack for info in infos)


def short_of_spus(available: int, replication_factor: int) -> InsufficientSpus | None:
    """Whether ``available`` SPUs are too few for ``replication_factor`` distinct replicas.

    The one place this rule is written: computed assignment and the create api's check
    of a new topic (``sc.controllers.topic.policy.missing_spus``) both call it.

    Returns:
        ``InsufficientSpus`` when they are too few, else None.
    """
    if available < replication_factor:
        return InsufficientSpus(needed=replication_factor, available=available)
    return None


def compute_assignment(
    spus: Iterable[SpuInfo | int],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int = 0,
    ignore_rack: bool = False,
    existing: Sequence[Sequence[int]] = (),
) -> AssignmentResult:
    """Compute a balanced, deterministic replica map for a new or growing topic.

    Args:
        spus: the registered SPUs (ids, or ``SpuInfo`` with racks).
        partitions: number of partitions (>= 1).
        replication_factor: replicas per partition (>= 1).
        start_index: rotates the base order so successive topics start their leaders
            on different SPUs (the topic controller passes the number of partitions
            already in the cluster); any integer, taken modulo the SPU count.
        ignore_rack: treat every SPU as rackless.
        existing: the rows a growing topic already has (partitions ``0..k-1``); they
            are kept as they are and only seed the loads the fill balances against.
            Replicas on SPUs no longer registered count for nothing.

    Returns:
        ``Assignment`` of all ``partitions`` rows; ``InsufficientSpus`` when there are
        fewer SPUs than the factor; ``InvalidAssignment`` when partitions or factor is
        below 1, or ``partitions`` is below the existing rows.

    Raises:
        InvalidConfigError: the same SPU id is given twice.
    """
    if partitions < 1:
        return InvalidAssignment(f"partitions must be at least 1, got {partitions}")
    if replication_factor < 1:
        return InvalidAssignment(f"replication factor must be at least 1, got {replication_factor}")
    if partitions < len(existing):
        return InvalidAssignment(
            f"partitions can only be added: {partitions} is below the {len(existing)} existing"
        )
    infos = [_as_info(s) for s in spus]
    order = spu_sequence(infos, ignore_rack=ignore_rack)
    count = len(order)
    short = short_of_spus(count, replication_factor)
    if short is not None:
        return short
    shift = start_index % count
    order = order[shift:] + order[:shift]
    rack_of: dict[int, str] = {}
    if not ignore_rack and _rack_aware(infos):
        rack_of = {info.id: info.rack or "" for info in infos}
    kept = tuple(tuple(row) for row in existing)
    return Assignment(kept + _fill(order, partitions, replication_factor, rack_of, kept))


def _fill(
    order: tuple[int, ...],
    partitions: int,
    factor: int,
    rack_of: Mapping[int, str],
    existing: tuple[tuple[int, ...], ...] = (),
) -> tuple[tuple[int, ...], ...]:
    """The greedy fill described in the module docstring, over positions in ``order``.

    Returns the rows after ``existing``, whose replicas only seed the loads.
    """
    count = len(order)
    racks = [rack_of.get(spu, "") for spu in order]
    leaders = [0] * count
    replicas = [0] * count
    rack_load: dict[str, int] = dict.fromkeys(racks, 0)
    position = {spu: i for i, spu in enumerate(order)}
    for row in existing:
        for rank, spu in enumerate(row):
            i = position.get(spu)
            if i is None:  # an SPU no longer registered holds no load here
                continue
            leaders[i] += rank == 0
            replicas[i] += 1
            rack_load[racks[i]] += 1
    result: list[tuple[int, ...]] = []
    positions = range(count)
    for part in range(len(existing), partitions):
        lead = min(positions, key=lambda i: (leaders[i], replicas[i], rack_load[racks[i]], i))
        chosen = [lead]
        in_part = {racks[lead]: 1}
        leaders[lead] += 1
        replicas[lead] += 1
        rack_load[racks[lead]] += 1
        spread = part // count  # grows each round, so follower pairs rotate
        for _ in range(factor - 1):
            taken = set(chosen)
            follower = min(
                (i for i in positions if i not in taken),
                key=lambda i: (
                    in_part.get(racks[i], 0),
                    replicas[i],
                    rack_load[racks[i]],
                    -leaders[i],
                    (i - lead - 1 - spread) % count,
                ),
            )
            chosen.append(follower)
            in_part[racks[follower]] = in_part.get(racks[follower], 0) + 1
            replicas[follower] += 1
            rack_load[racks[follower]] += 1
        result.append(tuple(order[i] for i in chosen))
    return tuple(result)


def check_manual_assignment(
    rows: Mapping[int, Sequence[int]],
    known_spus: Collection[int],
    *,
    partitions: int | None = None,
    replication_factor: int | None = None,
) -> Assignment | InvalidAssignment:
    """Validate a manual replica map (partition -> SPUs, leader first).

    Args:
        rows: the map, e.g. ``TopicSpec.assignment_map()`` or ``parse_assignment(...)``.
        known_spus: ids of the registered SPUs.
        partitions: when given, the number of partitions the map must have.
        replication_factor: when given, the number of replicas every row must have.

    Returns:
        The map as an ``Assignment``, or ``InvalidAssignment`` naming the first problem:
        no rows, a gap in partition ids, a wrong partition count, an empty row,
        inconsistent replica counts, a duplicate or negative SPU id, an unknown SPU.
    """
    if not rows:
        return InvalidAssignment("replica assignment lists no partitions")
    ids = sorted(rows)
    if ids != list(range(len(ids))):
        return InvalidAssignment(
            f"replica assignment partitions {ids} must be 0..{len(ids) - 1} without gaps"
        )
    if partitions is not None and len(ids) != partitions:
        return InvalidAssignment(
            f"replica assignment has {len(ids)} partitions, the topic has {partitions}"
        )
    width = replication_factor if replication_factor is not None else len(rows[0])
    known = set(known_spus)
    result: list[tuple[int, ...]] = []
    for part in ids:
        reps = tuple(rows[part])
        problem = _row_problem(part, reps, width, known)
        if problem is not None:
            return InvalidAssignment(problem)
        result.append(reps)
    return Assignment(tuple(result))


def _row_problem(part: int, reps: tuple[int, ...], width: int, known: set[int]) -> str | None:
    if not reps:
        return f"partition {part} has no replicas"
    if len(reps) != width:
        return f"partition {part} has {len(reps)} replicas, expected {width} like the others"
    if len(set(reps)) != len(reps):
        return f"partition {part} lists an SPU twice: {list(reps)}"
    for spu in reps:
        if isinstance(spu, bool) or not isinstance(spu, int) or spu < 0:
            return f"partition {part}: SPU id {spu!r} is not a non-negative integer"
    unknown = [spu for spu in reps if spu not in known]
    if unknown:
        return f"partition {part}: unknown SPU {unknown[0]}"
    return None


def parse_assignment(data: Any) -> dict[int, tuple[int, ...]]:
    """Read a replica assignment file's content into ``{partition: replicas}``.

    Accepts JSON text or the decoded value in any of these shapes: Fluvio's
    ``{"partitions": [{"id": 0, "replicas": [0, 1]}, ...]}``, a list of rows with ``id``
    or ``partition`` keys, or a plain ``{partition: replicas}`` mapping. Only the shape
    is checked here; ``check_manual_assignment`` checks the content.

    Raises:
        InvalidConfigError: not JSON, or not one of the shapes above.
    """
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise InvalidConfigError(f"replica assignment: not valid JSON: {exc}") from exc
    if isinstance(data, Mapping) and "partitions" in data:
        data = data["partitions"]
    if isinstance(data, Mapping):
        pairs = list(data.items())
    elif isinstance(data, list | tuple):
        pairs = [_row_pair(row) for row in data]
    else:
        raise InvalidConfigError("replica assignment: expected a list of partitions")
    result: dict[int, tuple[int, ...]] = {}
    for key, reps in pairs:
        part = _as_int(key, "partition id")
        if part in result:
            raise InvalidConfigError(f"replica assignment: partition {part} listed twice")
        if not isinstance(reps, list | tuple):
            raise InvalidConfigError(f"replica assignment: partition {part} needs a list")
        result[part] = tuple(_as_int(spu, f"partition {part} SPU id") for spu in reps)
    return result


def _row_pair(row: Any) -> tuple[Any, Any]:
    if not isinstance(row, Mapping):
        raise InvalidConfigError("replica assignment: each row must be {id, replicas}")
    key = row.get("id", row.get("partition"))
    if key is None or "replicas" not in row:
        raise InvalidConfigError("replica assignment: each row needs 'id' and 'replicas'")
    return key, row["replicas"]


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise InvalidConfigError(f"replica assignment: {what} {value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise InvalidConfigError(f"replica assignment: {what} {value!r} is not an integer")
