"""The SC's consumer-group coordinator (seed ``004``): member sessions, plans, offsets.

``coordinator`` drives the pure reducer of ``sc.controllers.group`` and carries out its
actions, keeping member sessions in ``sessions`` and its pure choices in ``decisions``;
``sc.public_api`` routes the group apis (5001-5014) to it; ``metrics`` holds its
per-group counters.
"""

from __future__ import annotations

from sc.groups.coordinator import GateAcks, GroupCoordinator
from sc.groups.metrics import GroupMetrics

__all__ = ["GateAcks", "GroupCoordinator", "GroupMetrics"]
