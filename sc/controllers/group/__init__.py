"""Group controller (seed ``004``): the assignor, the reducer, its events and actions.

Unlike the store controllers in ``sc.controllers.REDUCERS``, it is driven by the SC's
group coordinator, one group at a time: ``reduce(GroupSnapshot, GroupEvent)`` returns
``GroupAction``s (see ``reducer`` for the theory of operation, ``policy`` for member
identity, ``assignor`` for the plan).
"""

from __future__ import annotations

from sc.controllers.group.actions import (
    FenceMember,
    GateEntry,
    Granted,
    GroupAction,
    PublishPlan,
    PushAssignment,
    Reject,
    UpdateGates,
)
from sc.controllers.group.assignor import TopicPartition, assign
from sc.controllers.group.events import (
    ExpiryCause,
    GroupEvent,
    GroupSnapshot,
    MemberExpired,
    MemberJoined,
    MemberLeft,
    PartitionsReleased,
    RebalanceTimedOut,
    Seed,
    TopicDeleted,
    TopicPartitionsChanged,
)
from sc.controllers.group.policy import check_epoch, decide_join, gates_of, view_of
from sc.controllers.group.reducer import reduce

__all__ = [
    "reduce",
    "assign",
    "TopicPartition",
    "decide_join",
    "check_epoch",
    "view_of",
    "gates_of",
    # events
    "GroupSnapshot",
    "GroupEvent",
    "MemberJoined",
    "MemberLeft",
    "ExpiryCause",
    "MemberExpired",
    "PartitionsReleased",
    "RebalanceTimedOut",
    "TopicPartitionsChanged",
    "TopicDeleted",
    "Seed",
    # actions
    "GroupAction",
    "Granted",
    "PublishPlan",
    "PushAssignment",
    "FenceMember",
    "GateEntry",
    "UpdateGates",
    "Reject",
]
