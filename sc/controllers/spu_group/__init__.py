"""SPU group controller (see ``reducer`` for its theory of operation, ``policy`` for rules)."""

from __future__ import annotations

from sc.controllers.spu_group.reducer import reduce

__all__ = ["reduce"]
