"""Action dispatcher and updaters: where controller actions meet the outside world.

Theory of operation. Controllers return plain action values (``sc.actions``); the
controller loop hands each batch to ``ActionDispatcher.execute``, which routes them by
family:

- connection-manager actions are applied at once, in order (in-memory bookkeeping that
  queues pushes to SPUs);
- KV actions go to ``KvUpdater``, which writes any registered kind through the KV
  store's generic calls: actions on the same object (same kind and name) run one after
  another in the order decided, different objects run concurrently (bounded), so a batch of
  thousands of writes keeps Redis busy instead of waiting on each round trip;
- provisioner actions go to ``ProvisionerUpdater``, one after another.

A KV write that loses its compare-and-set (``ConflictError``), creates what exists, or
touches what is gone is *dropped*: the object changed since the controller decided, and
that newer change is on its way to the controllers, which decide again. Dropped and
failed actions are reported back in the ``Outcome`` so the loop can retry the event
that caused them. Nothing here raises: failures are logged and counted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sc.actions import (
    Action,
    CmAction,
    CmAddPartition,
    CmAddSpu,
    CmUpdatePartition,
    CmUpdateSpu,
    KvAction,
    KvCreate,
    KvDelete,
    KvUpdateSpec,
    KvUpdateStatus,
    ProvisionerAction,
    ProvisionSpu,
    TerminateSpu,
)
from sc.kv.store import KvStore
from spark_stream.errors import ConflictError, FluvioError, NotFoundError

if TYPE_CHECKING:
    from sc.connection_manager import ConnectionManager
    from sc.provisioner import Provisioner

__all__ = ["Outcome", "KvUpdater", "ProvisionerUpdater", "ActionDispatcher"]

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What became of a batch of actions.

    Attributes:
        done: actions carried out.
        dropped: KV actions overtaken by a newer change (conflict, exists, gone).
        failed: actions that raised anything else (logged).
    """

    done: int = 0
    dropped: list[Action] = field(default_factory=list)
    failed: list[Action] = field(default_factory=list)

    def merge(self, other: Outcome) -> None:
        """Add ``other``'s counts and lists to this one."""
        self.done += other.done
        self.dropped += other.dropped
        self.failed += other.failed


class KvUpdater:
    """Writes KV actions to the store.

    Args:
        kv: the store.
        concurrency: objects written at once.
    """

    def __init__(self, kv: KvStore, concurrency: int = 64) -> None:
        self.kv = kv
        self.concurrency = concurrency

    async def execute(self, actions: Sequence[KvAction]) -> Outcome:
        """Carry out ``actions``: per object in order, objects concurrently.

        A few workers take whole per-object groups from a shared list, rather than one
        task per object: a batch holds thousands of objects.
        """
        groups: dict[tuple[str, str], list[KvAction]] = {}
        for action in actions:
            groups.setdefault((action.kind, action.name), []).append(action)
        todo = list(groups.values())
        todo.reverse()  # pop() from the end keeps the decision order
        outcome = Outcome()

        async def worker() -> None:
            while todo:
                await self._run(todo.pop(), outcome)

        workers = min(self.concurrency, len(todo))
        await asyncio.gather(*(worker() for _ in range(workers)))
        return outcome

    async def _run(self, group: list[KvAction], outcome: Outcome) -> None:
        for action in group:
            try:
                await self.write(action)
                outcome.done += 1
            except (ConflictError, NotFoundError) as exc:
                log.debug("kv action dropped action=%s reason=%s", _describe(action), exc)
                outcome.dropped.append(action)
            except FluvioError as exc:
                log.error("kv action failed action=%s error=%r", _describe(action), exc)
                outcome.failed.append(action)
            except Exception:
                log.exception("kv action failed action=%s", _describe(action))
                outcome.failed.append(action)

    async def write(self, action: KvAction) -> None:
        """Carry out one KV action.

        Raises:
            ConflictError: the compare-and-set lost (``ObjectExistsError`` for creates).
            NotFoundError: the object is gone.
            KvUnavailableError: Redis stayed unreachable.
        """
        kv = self.kv
        match action:
            case KvCreate(obj=obj):
                await kv.create(obj)
            case KvUpdateSpec(kind=kind, name=name, spec=spec, revision=rev):
                await kv.update_spec(kind, name, spec, rev)
            case KvUpdateStatus(kind=kind, name=name, status=status, revision=rev):
                await kv.update_status(kind, name, status, rev)
            case KvDelete(kind=kind, name=name):
                await kv.delete(kind, name)
            case _:
                raise TypeError(f"not a KV action: {action!r}")
        log.debug("kv action done action=%s", _describe(action))


class ProvisionerUpdater:
    """Starts and stops managed SPUs through a ``Provisioner``, one at a time."""

    def __init__(self, provisioner: Provisioner) -> None:
        self.provisioner = provisioner

    async def execute(self, actions: Sequence[ProvisionerAction]) -> Outcome:
        """Carry out ``actions`` in order; failures are logged and reported."""
        outcome = Outcome()
        for action in actions:
            try:
                if isinstance(action, ProvisionSpu):
                    await self.provisioner.provision(action)
                elif isinstance(action, TerminateSpu):
                    await self.provisioner.terminate(action)
                else:
                    raise TypeError(f"not a provisioner action: {action!r}")
                outcome.done += 1
            except Exception:
                log.exception("provisioner action failed action=%s", _describe(action))
                outcome.failed.append(action)
        return outcome


class ActionDispatcher:
    """Routes actions to the connection manager, the KV updater and the provisioner."""

    def __init__(
        self,
        kv: KvUpdater,
        cm: ConnectionManager,
        provisioner: ProvisionerUpdater | None = None,
    ) -> None:
        self.kv = kv
        self.cm = cm
        self.provisioner = provisioner

    async def execute(self, actions: Sequence[Action]) -> Outcome:
        """Carry out a batch: CM actions now, then KV and provisioner actions together."""
        outcome = Outcome()
        kv_actions: list[KvAction] = []
        prov_actions: list[ProvisionerAction] = []
        for action in actions:
            if isinstance(action, CmAction):
                try:
                    self.cm.apply(action)
                    outcome.done += 1
                except Exception:
                    log.exception("connection manager action failed action=%s", _describe(action))
                    outcome.failed.append(action)
            elif isinstance(action, KvAction):
                kv_actions.append(action)
            elif isinstance(action, ProvisionerAction):
                prov_actions.append(action)
            else:
                log.error("unknown action dropped action=%r", action)
                outcome.failed.append(action)
        jobs = []
        if kv_actions:
            jobs.append(self.kv.execute(kv_actions))
        if prov_actions:
            if self.provisioner is None:
                log.warning("no provisioner: %d managed SPU actions ignored", len(prov_actions))
                outcome.failed += prov_actions
            else:
                jobs.append(self.provisioner.execute(prov_actions))
        for result in await asyncio.gather(*jobs):
            outcome.merge(result)
        return outcome


def _describe(action: Action) -> str:
    """A short one-line form of an action for logs (no whole specs)."""
    name = type(action).__name__
    match action:
        case KvCreate() | KvUpdateSpec() | KvUpdateStatus() | KvDelete():
            return str(action)
        case CmAddPartition(partition=p) | CmUpdatePartition(partition=p):
            return f"{name}({p.name})"
        case CmAddSpu(spu=spu) | CmUpdateSpu(spu=spu):
            return f"{name}({spu.name})"
    fields = getattr(action, "name", None) or getattr(action, "spu_id", "")
    return f"{name}({fields})"
