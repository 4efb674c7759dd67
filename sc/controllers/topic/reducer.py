"""Topic controller: from a topic spec to a replica map and partitions.

Theory of operation (seed ``003``, "Topic Controller"), one transition per event:

- **Add Topic**: a new topic carries status ``Init`` (the model's default, so there is
  nothing to write); the controller goes straight on to validation.
- **Init / InvalidConfig** -> validate the partition and replication parameters ->
  ``Pending``, or ``InvalidConfig`` with the reason.
- **Pending / InsufficientResources** -> enough SPUs for the replication factor? ->
  ``Provisioned`` with the ``replicaMap`` plus a partition ``KvCreate`` per row, or
  ``InsufficientResources`` with the reason.
- **Add SPU** -> retry every ``Pending``/``InsufficientResources`` topic (and
  re-validate ``InvalidConfig`` ones, which heals a manual map that named an SPU
  registered only now).
- **Partitions added** (``ADD_PARTITIONS`` raised a ``Provisioned`` topic's
  ``spec.partitions`` above its map) -> the map gains the new rows (``policy.grow``: the
  same fill, seeded with the existing rows) plus a partition ``KvCreate`` per new row;
  too few SPUs leaves the map as it is with a ``reason``, retried on Add SPU and
  Reconcile. The spec is written first, so an SC stopping in between grows the topic
  at the next Reconcile.
- **Reconcile** -> advance every unfinished topic, and recreate partitions that a
  ``Provisioned`` topic's map lists but the store lacks (an SC that stopped between the
  status write and the partition creates). Only the sweep does this repair: right after
  a provisioning the creates are still in flight, so a topic event must not repeat them.

A status equal to the current one is never written again, so re-running an event on a
snapshot that already reflects it yields nothing. Leaders of successive topics are
spread by passing ``start_index`` = partitions already in the store (plus the ones this
event provisions), see ``docs/assignment.md``. Topic deletion needs no action here: the
KV store deletes a topic's partitions with it. Partitions are never removed: the api
only raises ``partitions``, and a map with more rows than the spec is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from sc.actions import Action, KvCreate, KvUpdateStatus
from sc.controllers.events import Change, ControllerEvent, Reconcile
from sc.controllers.topic.policy import grow, growing, missing_partitions, provision, validate
from sc.kv.store import ChangeType
from sc.local_store import StoreView
from spark_stream.models import Partition, Spu, Topic, TopicResolution

__all__ = ["reduce"]

_VALIDATE = (TopicResolution.INIT, TopicResolution.INVALID_CONFIG)
_PROVISION = (TopicResolution.PENDING, TopicResolution.INSUFFICIENT_RESOURCES)


def reduce(store: StoreView, event: ControllerEvent) -> list[Action]:
    """Actions for one event; events about other objects yield none."""
    match event:
        case Change(kind=Topic.kind, type=ChangeType.ADDED | ChangeType.MODIFIED, new=Topic()):
            topic = store.topic(event.name) or event.new
            assert isinstance(topic, Topic)
            return _advance([topic], store)
        case Change(kind=Spu.kind, type=ChangeType.ADDED):
            waiting = store.topics_by_resolution(*_VALIDATE, *_PROVISION)
            grown = [t for t in store.topics() if growing(t)]
            return _advance([*waiting, *grown], store)
        case Reconcile():
            actions = _advance(store.topics(), store)
            for topic in store.topics():
                actions += [KvCreate(p) for p in missing_partitions(topic, store)]
            return actions
    return []


def _advance(topics: Iterable[Topic], store: StoreView) -> list[Action]:
    """One transition for each topic, in name order, chaining leader start indexes."""
    actions: list[Action] = []
    start = store.partition_count()
    for topic in sorted(topics, key=lambda t: t.name):
        resolution = topic.status.resolution
        if resolution in _VALIDATE:
            status = validate(topic, store)
            created: tuple[Partition, ...] = ()
        elif resolution in _PROVISION:
            outcome = provision(topic, store, start)
            status, created = outcome.status, outcome.partitions
            start += len(created)
        elif growing(topic):
            outcome = grow(topic, store, start)
            status, created = outcome.status, outcome.partitions
            start += len(created)
        else:
            continue
        if status != topic.status:
            actions.append(KvUpdateStatus.of(topic, status))
            actions += [KvCreate(p) for p in created]
    return actions
