"""SPU controller (see ``reducer`` for its theory of operation)."""

from __future__ import annotations

from sc.controllers.spu.reducer import reduce

__all__ = ["reduce"]
