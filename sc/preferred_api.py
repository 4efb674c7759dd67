"""The ``ELECT_PREFERRED`` admin request: leaders back to their preferred replicas now.

The same election the SC's periodic sweep runs (``ElectPreferred``, planned by
``sc.controllers.partition.preferred``), but with no imbalance threshold and no bound on
the number of moves, limited to one topic when asked: the handler plans on the mirror to
know what it asked for, submits the event to the controller loop (which plans again on
the state it reduces, so nothing unsafe moves if the state changed in between), and
waits, bounded, until the mirror shows the moves.
"""

from __future__ import annotations

from sc.controllers.events import ElectPreferred
from sc.controllers.partition.policy import leader_of
from sc.controllers.partition.preferred import plan_preferred, preferred_leader
from sc.dispatcher import Dispatcher
from spark_stream.errors import UnknownTopicError
from spark_stream.models import Partition
from spark_stream.protocol import control as c

__all__ = ["elect_preferred"]


def _away(partitions: list[Partition]) -> list[str]:
    return [p.name for p in partitions if leader_of(p) != preferred_leader(p)]


async def elect_preferred(
    dispatcher: Dispatcher, topic: str | None, wait_s: float
) -> c.ElectPreferredResponse:
    """Elect the preferred replica of every movable partition (of ``topic``, or all).

    Args:
        dispatcher: the SC's controller loop (its mirror is read, the event submitted).
        topic: only this topic's partitions; None: every topic.
        wait_s: how long to wait for the moves to show in the mirror.

    Returns:
        The partitions moved, and those still led elsewhere.

    Raises:
        UnknownTopicError: ``topic`` does not exist.
    """
    store = dispatcher.store
    if topic is not None and store.topic(topic) is None:
        raise UnknownTopicError(f"topic {topic!r} does not exist")
    partitions = store.partitions()
    planned = {
        p.name
        for p in plan_preferred(
            partitions, store.online_spu_ids(), limit=len(partitions), topic=topic
        )
    }
    if planned:
        dispatcher.submit(ElectPreferred(limit=len(planned), topic=topic))

    def current() -> list[Partition]:
        return [p for p in store.partitions() if topic is None or p.topic == topic]

    await dispatcher.wait_until(lambda: not planned.intersection(_away(current())), wait_s)
    pending = _away(current())
    moved = sorted(planned - set(pending))
    return c.ElectPreferredResponse(moved=moved, pending=pending)
