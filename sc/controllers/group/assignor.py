"""The group assignor: sticky, balanced, coverage-first, deterministic. Pure.

Theory of operation (brief 4.5, fibril's ``StickyConsumerGroupAssignor``):

1. **Classes.** A partition may go only to a member subscribed to its topic. Topics are
   grouped by the exact set of members subscribed to them; each such *class* (its
   topics' partitions and its subscribers) is planned on its own. With uniform
   subscriptions (every member subscribes to the same topics, the usual case) there is
   one class and the rules below hold for the whole group.
2. **Targets.** A class of ``n`` partitions and ``m`` members gives each member
   ``n // m`` partitions, and the ``n % m`` extra ones to the members that already hold
   the most of the class's partitions (ties: lower member id). Loads end within 1.
3. **Keep.** Each member keeps its current partitions up to its target (the lowest
   ``(topic, partition)`` first); a current holder that is not a subscriber keeps none.
4. **Deal.** The rest (free partitions and what members above target shed), in
   ``(topic, partition)`` order, go round-robin to the members below target, in member
   id order: a member's share spreads over the class's topics.

Consequences the tests pin: every partition with a subscriber is assigned once
(coverage, disjointness); loads in a class are within 1; a join moves exactly the
newcomer's share and a leave exactly the leaver's partitions (uniform subscriptions);
the output depends on the inputs' content only, never their order; and a plan fed back
as ``current`` comes back unchanged, which is why an SC seeded from the published plan
reproduces it. With mixed subscriptions a member's total over classes may differ by more
than 1 (each class is balanced among its own subscribers; see ``docs/consumer-groups.md``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping

__all__ = ["TopicPartition", "assign"]

#: ``(topic, partition index)``.
TopicPartition = tuple[str, int]


def assign(
    partitions: Mapping[str, int],
    subscriptions: Mapping[str, Collection[str]],
    current: Mapping[TopicPartition, str],
) -> dict[TopicPartition, str]:
    """The target plan: which member each partition should go to.

    Args:
        partitions: partition count of each topic that exists (``{topic: count}``).
        subscriptions: each member's subscribed topics (``{member_id: topics}``).
        current: who holds (or should keep, if balance allows) each partition now.

    Returns:
        ``{(topic, partition): member_id}`` for every partition of a subscribed topic;
        partitions of topics nobody subscribes to are absent.
    """
    subscribers: dict[str, list[str]] = defaultdict(list)
    for member in sorted(subscriptions):
        for topic in subscriptions[member]:
            if partitions.get(topic, 0) > 0:
                subscribers[topic].append(member)
    classes: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for topic in sorted(subscribers):
        classes[tuple(subscribers[topic])].append(topic)
    plan: dict[TopicPartition, str] = {}
    for members, topics in sorted(classes.items()):
        tps = [(topic, p) for topic in topics for p in range(partitions[topic])]
        _assign_class(tps, members, current, plan)
    return plan


def _assign_class(
    tps: list[TopicPartition],
    members: tuple[str, ...],
    current: Mapping[TopicPartition, str],
    plan: dict[TopicPartition, str],
) -> None:
    """Plan one class: ``tps`` (sorted) among ``members`` (sorted), into ``plan``."""
    eligible = set(members)
    held: dict[str, list[int]] = {member: [] for member in members}
    free: list[int] = []
    for i, tp in enumerate(tps):
        holder = current.get(tp)
        if holder is not None and holder in eligible:
            held[holder].append(i)
        else:
            free.append(i)
    base, extra = divmod(len(tps), len(members))
    by_load = sorted(members, key=lambda m: (-len(held[m]), m))
    target = {member: base + (rank < extra) for rank, member in enumerate(by_load)}
    shed: list[int] = []
    deficit: dict[str, int] = {}
    for member in members:
        mine = held[member]
        keep = target[member]
        for i in mine[:keep]:
            plan[tps[i]] = member
        shed += mine[keep:]
        if len(mine) < keep:
            deficit[member] = keep - len(mine)
    to_deal = sorted(free + shed) if shed else free
    # Round-robin in member id order: round r serves every member still short of r + 1.
    slots: list[str] = []
    for r in range(max(deficit.values(), default=0)):
        slots += [member for member, short in deficit.items() if short > r]
    for i, member in zip(to_deal, slots, strict=True):
        plan[tps[i]] = member
