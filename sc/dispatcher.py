"""The SC's controller loop: readers -> metadata dispatcher -> controllers -> actions.

Theory of operation (seed ``003``, "Workflows"):

- **Readers** put raw inputs in one inbox: the KV watch task puts ``ChangeEvent`` and
  ``Resync`` items; the connection manager and the app's timers ``submit`` controller
  events (``SpuConnected``, ``SpuDisconnected``, ``LrsUpdate``, ``Reconcile``).
- **Metadata dispatcher**: one loop task takes the inbox in batches (everything queued,
  up to ``batch_max``), mirrors KV inputs into the ``LocalStore`` (the only writer), and
  turns each input into controller events: the store's ``Change``s, or the CM event.
- **Controllers** are pure reducers ``(store view, event) -> actions``, run in turn on
  every event. A reducer that raises is logged and skipped; the loop goes on.
- **Action dispatcher**: the batch's actions go to ``ActionDispatcher.execute``
  (``sc.updaters``) and are awaited before the next batch, so actions on one object
  never overtake each other across batches, while the thousands of writes of a big
  batch run concurrently.
- **Retry**: controllers decide on a mirror that lags the KV a little, so a write may
  lose its compare-and-set. For KV changes that is fine (the newer change comes back and
  is reduced again); a CM event has no such echo, so an event whose action was dropped
  or failed is queued again after the next batch of KV changes (a few times at most; a
  newer event about the same SPU or partition replaces it). ``Reconcile`` sweeps repair
  the rest.
- **Waiting**: ``wait_revision`` lets a request handler wait until the mirror (or the
  actions) reached a KV revision, which gives clients read-your-writes; ``wait_until``
  waits for any condition on the mirror (an in-sync shrink recorded, ``sc.isr``).

The watch survives Redis outages: on ``KvUnavailableError`` it backs off and watches
again from the last revision it delivered; the store answers with the changes since, or
a ``Resync`` when it cannot.

**A store that forgot.** A ``Resync`` at a revision below the mirror's means the store
lost data (flushed, replaced by an empty server, restored from an older file). Reducing
it would delete every topic and stop every managed SPU while the SPUs still hold the
data; so the loop halts instead: it reduces nothing more and calls ``on_store_lost``
(the SC exits; the next SC rebuilds from the SPUs' reports, ``sc.rebuild``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from sc.actions import Action
from sc.controllers import REDUCERS, Reducer
from sc.controllers.events import (
    ControllerEvent,
    LrsUpdate,
    Reconcile,
    SpuConnected,
    SpuDisconnected,
)
from sc.kv.store import ChangeEvent, KvStore, Resync
from sc.local_store import Change, LocalStore
from sc.updaters import Outcome
from spark_stream.backoff import BackoffPolicy
from spark_stream.errors import KvUnavailableError

__all__ = ["Dispatcher", "ChangeListener"]

log = logging.getLogger(__name__)

#: Called with the changes the mirror made and whether they come from a full re-list.
ChangeListener = Callable[[list[Change], bool], None]
Execute = Callable[[Sequence[Action]], Awaitable[Outcome]]

_Inbox = ChangeEvent | Resync | ControllerEvent


def _retry_key(event: ControllerEvent) -> tuple[str, Any] | None:
    """Events about the same SPU or partition share a key: the newer one wins."""
    match event:
        case SpuConnected(spu_id=spu_id) | SpuDisconnected(spu_id=spu_id):
            return ("spu", spu_id)
        case LrsUpdate(partition=name):
            return ("lrs", name)
    return None


class Dispatcher:
    """Feeds KV changes and CM events through the controllers to the updaters.

    Args:
        kv: the KV store to list and watch.
        store: the local mirror (this dispatcher is its only writer).
        execute: carries out a batch of actions (``ActionDispatcher.execute``).
        reducers: the controllers, by name; default ``sc.controllers.REDUCERS``.
        batch_max: most inbox items reduced before their actions are carried out.
        max_retries: how often a CM event whose action was dropped is tried again.
        inbox_limit: KV changes queued before the watch waits for the loop.
    """

    def __init__(
        self,
        kv: KvStore,
        store: LocalStore,
        execute: Execute,
        reducers: Mapping[str, Reducer] | None = None,
        *,
        batch_max: int = 2048,
        max_retries: int = 5,
        inbox_limit: int = 50_000,
    ) -> None:
        self.kv = kv
        self.store = store
        self._execute = execute
        self.reducers = dict(REDUCERS if reducers is None else reducers)
        self.batch_max = batch_max
        self.max_retries = max_retries
        self.inbox_limit = inbox_limit
        self._inbox: deque[_Inbox] = deque()
        self._wakeup = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._advanced = asyncio.Event()  # set (and replaced) whenever a batch finishes
        self._deferred: dict[tuple[str, Any], tuple[ControllerEvent, int]] = {}
        self._listeners: list[ChangeListener] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._watched_to = 0  # last KV revision the watch put in the inbox
        self.processed_revision = 0
        self.errors = 0
        self.batches = 0
        """Batches reduced and carried out (the controller loop's passes)."""
        self.on_batch: Callable[[float], None] | None = None
        self.on_store_lost: Callable[[str], None] | None = None
        """Called once (with the reason) when the store went back in time; see above."""
        self.halted = False
        """True once the store was found to have forgotten: nothing is reduced any more."""
        """Called with each batch's seconds, reduce and actions (the SC's metrics)."""

    # -- inputs ------------------------------------------------------------------------

    def submit(self, event: ControllerEvent) -> None:
        """Queue a controller event (from the connection manager or a timer)."""
        self._inbox.append(event)
        self._wakeup.set()

    def add_listener(self, listener: ChangeListener) -> None:
        """Call ``listener`` with every batch of changes the mirror makes."""
        self._listeners.append(listener)

    @property
    def backlog(self) -> int:
        """Inputs queued and not yet reduced."""
        return len(self._inbox)

    # -- life cycle --------------------------------------------------------------------

    async def load(self) -> int:
        """Mirror the whole KV, reduce it, and carry out the actions; return the revision.

        Raises:
            KvUnavailableError: Redis did not answer within its reconnect timeout.
        """
        objects, revision = await self.kv.list_kinds(None)
        changes = self.store.replace(objects, revision)
        self._watched_to = revision
        self._notify(changes, True)
        await self._process(list(changes), kv_applied=True)
        log.info(
            "sc state loaded revision=%d objects=%d",
            revision,
            sum(len(v) for v in objects.values()),
        )
        return revision

    def start(self) -> None:
        """Start the watch and the loop tasks (after ``load``)."""
        if self._tasks:
            raise RuntimeError("dispatcher already started")
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._watch_loop(), name="sc-kv-watch"),
            loop.create_task(self._loop(), name="sc-dispatcher"),
        ]

    async def stop(self) -> None:
        """Stop both tasks; queued inputs are dropped."""
        tasks, self._tasks = self._tasks, []
        # Cancel again until they end: a cancellation that lands as a redis-py read
        # times out can be swallowed (asyncio.timeout on 3.11) and the watch retries.
        for _ in range(20):
            pending = [task for task in tasks if not task.done()]
            if not pending:
                break
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=0.25)
        else:
            log.warning("dispatcher tasks did not stop in time; abandoning them")
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error("dispatcher task failed error=%r", task.exception())

    # -- waiting -----------------------------------------------------------------------

    async def wait_revision(
        self,
        revision: int,
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        processed: bool = False,
    ) -> bool:
        """Wait until the mirror (or, with ``processed``, the actions) reached ``revision``.

        Returns:
            True when reached, False after ``timeout`` seconds.
        """

        def reached() -> bool:
            current = self.processed_revision if processed else self.store.revision
            return current >= revision

        return await self.wait_until(reached, timeout)

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> bool:  # noqa: ASYNC109
        """Wait until ``condition()`` holds, asked again after every batch of the loop.

        Returns:
            True when it held, False after ``timeout`` seconds.
        """
        try:
            async with asyncio.timeout(timeout):
                while not condition():
                    await self._advanced.wait()
        except TimeoutError:
            return False
        return True

    async def catch_up(self, timeout: float = 5.0, *, processed: bool = True) -> bool:  # noqa: ASYNC109
        """Wait until everything the KV holds now has gone through the loop."""
        revision = await self.kv.revision()
        return await self.wait_revision(revision, timeout, processed=processed)

    # -- readers -----------------------------------------------------------------------

    async def _watch_loop(self) -> None:
        backoff = BackoffPolicy(0.1, 5.0).start()
        while True:
            try:
                async for item in self.kv.watch(None, self._watched_to):
                    if len(self._inbox) >= self.inbox_limit:
                        self._room.clear()
                        await self._room.wait()
                    self._inbox.append(item)
                    self._wakeup.set()
                    self._watched_to = item.revision
                    backoff.reset()
            except KvUnavailableError as exc:
                log.warning("kv watch lost, retrying error=%s", exc)
            except Exception:
                log.exception("kv watch failed, retrying")
            await backoff.sleep()  # before watching again

    # -- the loop ----------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._inbox:
                try:
                    await self._step()
                except asyncio.CancelledError:
                    raise
                except Exception:  # never let one bad batch stop the SC
                    self.errors += 1
                    log.exception("dispatcher batch failed")

    async def _step(self) -> None:
        items = [self._inbox.popleft() for _ in range(min(self.batch_max, len(self._inbox)))]
        if len(self._inbox) < self.inbox_limit:
            self._room.set()
        if self.halted:
            return  # the store forgot: acting on anything now could delete what it lost
        events: list[ControllerEvent] = []
        changes: list[Change] = []
        resync = False
        for item in items:
            if isinstance(item, ChangeEvent):
                change = self.store.apply(item)
                if change is not None:
                    changes.append(change)
                    events.append(change)
            elif isinstance(item, Resync):
                log.warning("kv watch resync revision=%d", item.revision)
                if item.revision < self.store.revision:
                    self._halt(item.revision)
                    return
                found = self.store.apply_resync(item)
                resync = True
                changes += found
                events += found
            else:
                key = _retry_key(item)
                if key is not None:
                    self._deferred.pop(key, None)
                events.append(item)
        if changes or resync:
            self._notify(changes, resync)
        await self._process(events, kv_applied=bool(changes) or resync)

    def _halt(self, revision: int) -> None:
        """The store went back from the mirror's revision to ``revision``: stop reducing."""
        self.halted = True
        reason = (
            f"the KV store went back from revision {self.store.revision} to {revision}: "
            "it lost data (flushed, replaced or restored); nothing of it is acted on"
        )
        log.error("%s", reason)
        if self.on_store_lost is not None:
            self.on_store_lost(reason)

    async def _process(self, events: list[ControllerEvent], *, kv_applied: bool) -> None:
        """Reduce ``events`` (plus due retries), carry out the actions, mark progress."""
        began = time.perf_counter()
        retries: list[tuple[ControllerEvent, int]] = []
        if kv_applied and self._deferred:
            retries = list(self._deferred.values())
            self._deferred.clear()
        attempts: dict[int, int] = {}
        for event, attempt in retries:
            attempts[id(event)] = attempt
            events.append(event)
        actions: list[Action] = []
        source: dict[int, ControllerEvent] = {}
        for event in events:
            produced = self._reduce(event)
            for action in produced:
                source[id(action)] = event
            actions += produced
        outcome = await self._execute(actions) if actions else Outcome()
        for action in (*outcome.dropped, *outcome.failed):
            cause = source.get(id(action))
            key = _retry_key(cause) if cause is not None else None
            if cause is None or key is None:
                continue
            attempt = attempts.get(id(cause), 0) + 1
            if attempt > self.max_retries:
                log.warning(
                    "giving up on event after %d attempts event=%s", attempt - 1, _describe(cause)
                )
            elif key not in self._deferred:
                self._deferred[key] = (cause, attempt)
        self.processed_revision = self.store.revision
        self.batches += 1
        if self.on_batch is not None:
            self.on_batch(time.perf_counter() - began)
        self._advanced.set()
        self._advanced = asyncio.Event()

    def _reduce(self, event: ControllerEvent) -> list[Action]:
        actions: list[Action] = []
        for name, reducer in self.reducers.items():
            try:
                actions += reducer(self.store, event)
            except Exception:
                self.errors += 1
                log.exception("controller failed controller=%s event=%s", name, _describe(event))
        # One line per event that does something (and per reconcile sweep).
        level = logging.INFO if actions or isinstance(event, Reconcile) else logging.DEBUG
        if log.isEnabledFor(level):
            log.log(level, "event %s actions=%d", _describe(event), len(actions))
        return actions

    def _notify(self, changes: list[Change], resync: bool) -> None:
        for listener in self._listeners:
            try:
                listener(changes, resync)
            except Exception:
                log.exception("change listener failed")


def _describe(event: ControllerEvent) -> str:
    if isinstance(event, Change):
        return f"{event.type.value} {event.kind} {event.name} revision={event.revision}"
    if isinstance(event, LrsUpdate):
        return f"LrsUpdate {event.partition} leader={event.leader} leo={event.leo} hw={event.hw}"
    if isinstance(event, Reconcile):
        connected = None if event.connected is None else sorted(event.connected)
        return f"Reconcile connected={connected}"
    return repr(event)
