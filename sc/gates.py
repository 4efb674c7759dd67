"""Delivery-gate distribution: which gates each partition leader must hold, and what to send.

Theory of operation (``docs/consumer-groups.md``, "Delivery gates"; brief 4.7). The
coordinator publishes each consumer group's plan in its ``ConsumerGroup`` object
(``status.assignment``, ``status.generation``); the SC's local store mirrors it. From
those objects and the partitions' current leaders this module derives, per leader SPU,
the gates it must hold (``desired_gates``):

- a granted partition admits its member at its grant epoch, also while ``revoking``
  (the current owner keeps fetching until it releases the partition);
- a partition of a topic the group reads (assigned, or subscribed by a member) with no
  grant in the plan gets a **closed** gate (member ``None``), so its leader fails closed
  instead of serving anyone;
- a partition without a leader has no gates anywhere.

The connection manager keeps, per connected SPU, what it last sent, and pushes only the
difference (``gate_changes``): gates added or changed, and a closed gate for a gate that
left a still-existing group's plan on a partition the SPU still leads. Gates of a
partition an SPU stops leading need no message (the SPU drops them with the leadership);
a deleted group is sent as ``deleted_groups``. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from spark_stream.models import ConsumerGroup, parse_partition_name
from spark_stream.protocol import GateEntry

__all__ = [
    "GateKey",
    "GateView",
    "desired_gates",
    "gate_changes",
    "group_gates",
    "group_topics",
]

GateKey = tuple[str, str, int]
"""(group, topic, partition)."""

GateView = dict[GateKey, GateEntry]
"""The gates one SPU holds (or must hold)."""


def group_topics(group: ConsumerGroup, existing: Collection[str]) -> set[str]:
    """The topics whose partitions get ``group``'s gates: those it holds grants on and
    those its members subscribe to (named, or among ``existing`` by pattern)."""
    status = group.status
    topics = {grant.topic for grant in status.assignment}
    for member in status.members:
        topics.update(member.subscribed(existing))
    return topics


def group_gates(
    group: ConsumerGroup, partitions: Mapping[str, list[int]]
) -> dict[tuple[str, int], GateEntry]:
    """One group's gates for every partition of the topics it reads.

    Args:
        group: the group object (its plan is in ``status``).
        partitions: topic -> the partition indexes that exist.

    Returns:
        (topic, partition) -> the gate.
    """
    status = group.status
    generation = status.generation
    gates: dict[tuple[str, int], GateEntry] = {}
    for topic in sorted(group_topics(group, partitions)):
        for index in partitions.get(topic, ()):
            gates[(topic, index)] = GateEntry(group.name, topic, index, None, 0, generation)
    for grant in status.assignment:
        if grant.topic in partitions and grant.partition in partitions[grant.topic]:
            gates[(grant.topic, grant.partition)] = GateEntry(
                group.name,
                grant.topic,
                grant.partition,
                grant.member_id,
                min(grant.grant_epoch, generation),
                generation,
            )
    return gates


def desired_gates(
    groups: Iterable[ConsumerGroup], leaders: Mapping[str, int | None]
) -> dict[int, GateView]:
    """The gates each leader SPU must hold.

    Args:
        groups: every consumer group.
        leaders: partition name -> its leader SPU (``None``: no leader now).

    Returns:
        SPU id -> its gates (SPUs leading nothing a group reads are absent).
    """
    partitions: dict[str, list[int]] = {}
    for name in sorted(leaders):
        topic, index = parse_partition_name(name)
        partitions.setdefault(topic, []).append(index)
    out: dict[int, GateView] = {}
    for group in groups:
        for (topic, index), entry in group_gates(group, partitions).items():
            leader = leaders.get(f"{topic}-{index}")
            if leader is not None:
                out.setdefault(leader, {})[(group.name, topic, index)] = entry
    return out


def gate_changes(
    sent: GateView,
    desired: GateView,
    generations: Mapping[str, int],
    led: Iterable[tuple[str, int]] = (),
) -> list[GateEntry]:
    """What to push to an SPU that holds ``sent`` so that it holds ``desired``.

    Args:
        sent: the gates last pushed to the SPU.
        desired: the gates it must hold now.
        generations: every existing group's generation (for closing left-over gates).
        led: (topic, partition) the SPU leads now.

    Returns:
        Entries added or changed, then closed gates for the gates of existing groups
        that left the plan on partitions the SPU still leads.
    """
    changes = [entry for key, entry in desired.items() if sent.get(key) != entry]
    led = set(led)
    for key, old in sent.items():
        group, topic, index = key
        if key in desired or group not in generations or (topic, index) not in led:
            continue
        if old.member is not None:
            changes.append(GateEntry(group, topic, index, None, 0, generations[group]))
    return changes
