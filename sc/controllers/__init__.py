"""SC controllers as pure reducers: ``(store view, event) -> list[Action]``.

One package per object (``spu``, ``spu_group``, ``topic``, ``partition``), each with a
``reducer`` (the seed's bullets, event by event) and, where rules need room, a
``policy``. ``REDUCERS`` lists them in the order a controller loop may run them; every
reducer ignores events about objects it does not handle. No I/O happens here: the loop
feeds events and hands the actions to the updaters.
"""

from __future__ import annotations

from collections.abc import Callable

from sc.actions import Action
from sc.controllers import partition, spu, spu_group, topic
from sc.controllers.events import (
    Change,
    ControllerEvent,
    ElectPreferred,
    LrsUpdate,
    Reconcile,
    SpuConnected,
    SpuDisconnected,
)
from sc.local_store import StoreView

__all__ = [
    "Change",
    "ControllerEvent",
    "ElectPreferred",
    "LrsUpdate",
    "Reconcile",
    "SpuConnected",
    "SpuDisconnected",
    "Reducer",
    "REDUCERS",
    "reduce_all",
]

#: A controller: the store view and one event in, actions out.
Reducer = Callable[[StoreView, ControllerEvent], list[Action]]

#: Every controller, by name.
REDUCERS: dict[str, Reducer] = {
    "spu": spu.reduce,
    "spu_group": spu_group.reduce,
    "topic": topic.reduce,
    "partition": partition.reduce,
}


def reduce_all(store: StoreView, event: ControllerEvent) -> list[Action]:
    """Run every controller on ``event`` and concatenate their actions, in order."""
    actions: list[Action] = []
    for reducer in REDUCERS.values():
        actions += reducer(store, event)
    return actions
