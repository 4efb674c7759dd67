"""Handlers of the consumer-group apis on the SC public port (5001-5006, 5010-5015).

Members' requests go to the ``GroupCoordinator``; commits and offset reads go straight
to the KV (``commit_group_offsets`` fences each partition); admin requests read the
group objects and the partitions' status (HW, log start) from the local mirror.
Every request's fields were checked when it was decoded (``InvalidRequestError``).
``PROGRESS_COMMIT`` (a Spark query's ``progressGroup``) writes to a progress-only group
(``kind: external``, created by its first request) and to no other kind.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from sc.groups.coordinator import GroupCoordinator
from sc.kv import CommitOutcome, OffsetCommit
from sc.kv.store import KvStore
from sc.local_store import StoreView
from spark_stream.errors import (
    GroupNotEmptyError,
    InvalidRequestError,
    UnknownGroupError,
)
from spark_stream.models import (
    ConsumerGroup,
    GroupKind,
    Partition,
)
from spark_stream.net.server import ConnContext
from spark_stream.protocol import ApiKey, Message, Request
from spark_stream.protocol import control as c

__all__ = ["ASSIGNOR", "GroupApi"]

#: The name ``describe`` gives the assignor (``sc.controllers.group.assignor``).
ASSIGNOR = "sticky-balanced"

log = logging.getLogger(__name__)


class GroupApi:
    """The group handlers, keyed by api (``routes``)."""

    def __init__(self, kv: KvStore, store: StoreView, coordinator: GroupCoordinator) -> None:
        self.kv = kv
        self.store = store
        self.coordinator = coordinator

    def routes(self) -> dict[int, Any]:
        """Api key -> handler, for the public server's table."""
        return {
            ApiKey.GROUP_JOIN: self._join,
            ApiKey.GROUP_HEARTBEAT: self._heartbeat,
            ApiKey.GROUP_RELEASE: self._release,
            ApiKey.GROUP_LEAVE: self._leave,
            ApiKey.OFFSET_COMMIT: self._commit,
            ApiKey.OFFSET_FETCH: self._fetch_offsets,
            ApiKey.LIST_GROUPS: self._list,
            ApiKey.DESCRIBE_GROUP: self._describe,
            ApiKey.DELETE_GROUP: self._delete,
            ApiKey.RESET_OFFSETS: self._reset,
            ApiKey.DELETE_OFFSETS: self._delete_offsets,
            ApiKey.PROGRESS_COMMIT: self._progress,
        }

    async def disconnected(self, ctx: ConnContext, cause: BaseException | None) -> None:
        """Server hook: a closed connection ends its member sessions."""
        await self.coordinator.disconnected(ctx.id)

    # -- members -------------------------------------------------------------------------

    async def _join(self, request: Request, ctx: ConnContext) -> AsyncIterator[c.GroupAssignment]:
        msg = request.message()
        assert isinstance(msg, c.GroupJoinRequest)
        host = ctx.peer.rsplit(":", 1)[0]
        stream = await self.coordinator.join(msg, ctx.id, host)
        log.info("group member joined group=%s member=%s", msg.group, msg.member_id)
        return stream.pushes()

    async def _heartbeat(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.GroupHeartbeatRequest)
        return await self.coordinator.heartbeat(msg, ctx.id)

    async def _release(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.GroupReleaseRequest)
        return c.GroupReleaseResponse(await self.coordinator.release(msg, ctx.id))

    async def _leave(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.GroupLeaveRequest)
        return c.GroupLeaveResponse(await self.coordinator.leave(msg, ctx.id))

    async def _commit(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.OffsetCommitRequest)
        self.coordinator.check_member(msg.group, msg.member_id)
        commits = [
            OffsetCommit(
                d["topic"], d["partition"], d["offset"], d["grantEpoch"], d.get("metadata", "")
            )
            for d in msg.commits
        ]
        results = await self.kv.commit_group_offsets(msg.group, msg.member_id, commits)
        fenced = sum(r.outcome is CommitOutcome.FENCED for r in results)
        self.coordinator.metrics(msg.group).fenced_commits += fenced
        out = []
        for r in results:
            error = r.error()
            out.append(
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "errorCode": 0 if error is None else error.code,
                    "message": "" if error is None else str(error),
                    "committed": r.committed,
                }
            )
        return c.OffsetCommitResponse(out)

    async def _fetch_offsets(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.OffsetFetchRequest)
        wanted = None if msg.partitions is None else c.tp_list(msg.partitions, "partitions")
        offsets = await self.kv.fetch_group_offsets(msg.group, wanted)
        return c.OffsetFetchResponse(
            [
                {
                    "topic": t,
                    "partition": p,
                    "offset": o.offset,
                    "grantEpoch": o.grant_epoch,
                    "tsMs": o.ts_ms,
                    "metadata": o.metadata,
                }
                for (t, p), o in sorted(offsets.items())
            ]
        )

    # -- admin ---------------------------------------------------------------------------

    async def _list(self, request: Request, ctx: ConnContext) -> Message:
        groups = []
        for g in self.coordinator.groups():
            rows = await self._rows(g)
            lags = [r["lag"] for r in rows if r["lag"] is not None]
            groups.append(
                {
                    "name": g.name,
                    "state": str(g.status.state.value),
                    "generation": g.status.generation,
                    "members": len(g.status.members),
                    "live": len(self.coordinator.live(g.name)),
                    "topics": sorted({r["topic"] for r in rows}),
                    "lag": sum(lags) if lags else None,
                }
            )
        return c.ListGroupsResponse(groups)

    def _partitions(self, topic: str) -> list[tuple[tuple[str, int], Partition | None]]:
        """Every partition of ``topic`` by its spec, with its object when there is one."""
        spec = self.store.topic(topic)
        parts = {p.index: p for p in self.store.partitions_of(topic)}
        count = spec.spec.partitions if spec is not None else 0
        return [((topic, i), parts.get(i)) for i in sorted(set(range(count)) | set(parts))]

    def _group(self, name: str) -> ConsumerGroup:
        group = self.coordinator.group(name)
        if group is None:
            raise UnknownGroupError(f"group {name!r} does not exist")
        return group

    async def _describe(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.DescribeGroupRequest)
        group = self._group(msg.group)
        rows = await self._rows(group)
        metrics = self.coordinator.report(msg.group)
        return c.DescribeGroupResponse(
            group.to_dict(),
            sorted(self.coordinator.live(msg.group)),
            rows,
            assignor=ASSIGNOR,
            metrics=metrics,
        )

    async def _rows(self, group: ConsumerGroup) -> list[dict[str, Any]]:
        """Per partition of the subscribed (or committed) topics: owner, offsets, lag."""
        offsets = await self.kv.fetch_group_offsets(group.name)
        owners = {g.tp: g.member_id for g in group.status.assignment}
        members = {m.member_id: m for m in group.status.members}
        existing = [t.name for t in self.store.topics()]
        subscribed = {t for m in group.status.members for t in m.subscribed(existing)}
        rows = []
        for topic in sorted(subscribed | {t for t, _ in offsets}):
            for tp, part in self._partitions(topic):
                owner = owners.get(tp)
                member = members.get(owner) if owner else None
                stored = offsets.get(tp)
                hw = None if part is None else _hw(part)
                leo = None if part is None or part.status.leo < 0 else part.status.leo
                rows.append(
                    {
                        "topic": topic,
                        "partition": tp[1],
                        "memberId": owner,
                        "instanceId": member.instance_id if member else None,
                        "clientId": member.client_id if member else None,
                        "host": member.host if member else None,
                        "offset": stored.offset if stored else None,
                        "hw": hw,
                        "leo": leo,
                        "lag": None if stored is None or hw is None else max(0, hw - stored.offset),
                        "lastCommitMs": stored.ts_ms if stored else None,
                    }
                )
        return rows

    async def _delete(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.DeleteGroupRequest)
        group = self._group(msg.group)
        if group.status.members:
            raise GroupNotEmptyError(
                f"group {msg.group!r} has {len(group.status.members)} member(s); stop them first"
            )
        last = await self.kv.delete_group(msg.group)
        self.coordinator.forget(msg.group, last.revision)
        revision = await self.kv.revision()
        log.info("group deleted group=%s", msg.group)
        return c.DeleteGroupResponse(revision)

    async def _reset(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.ResetOffsetsRequest)
        group = self._group(msg.group)
        if group.status.members:
            raise GroupNotEmptyError(
                f"group {msg.group!r} has {len(group.status.members)} member(s); "
                "offsets are reset only with no members"
            )
        current = await self.kv.fetch_group_offsets(msg.group)
        given = {(d["topic"], d["partition"]): d["offset"] for d in msg.offsets}
        topics = {msg.topic} if msg.topic else {t for t, _ in current} | {t for t, _ in given}
        plan: list[dict[str, Any]] = []
        for topic in sorted(topics):
            for tp, part in self._partitions(topic):
                now = current.get(tp)
                target = _target(msg, part, now.offset if now else None, given.get(tp))
                if target is None:
                    continue
                plan.append(
                    {
                        "topic": topic,
                        "partition": tp[1],
                        "current": now.offset if now else None,
                        "target": target,
                    }
                )
        if msg.execute and plan:
            targets: dict[tuple[str, int], int] = {
                (r["topic"], r["partition"]): r["target"] for r in plan
            }
            await self.kv.write_group_offsets(msg.group, targets)
            log.info("group offsets reset group=%s partitions=%d", msg.group, len(plan))
        return c.ResetOffsetsResponse(plan, msg.execute)

    async def _delete_offsets(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.DeleteOffsetsRequest)
        self._group(msg.group)
        return c.DeleteOffsetsResponse(await self.kv.delete_group_offsets(msg.group, msg.topic))

    async def _progress(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, c.ProgressCommitRequest)
        group = self.coordinator.group(msg.group) or await self.coordinator.create_external(
            msg.group
        )
        if group.status.members:
            raise GroupNotEmptyError(
                f"group {msg.group!r} has {len(group.status.members)} member(s): a progress "
                "group (progressGroup) has none; name another group"
            )
        if group.spec.kind is not GroupKind.EXTERNAL:
            raise InvalidRequestError(
                f"group: {msg.group!r} is a group of members (kind members), not a progress "
                "group (kind external); name another group or delete this one"
            )
        wanted = {(d["topic"], d["partition"]): d["offset"] for d in msg.offsets}
        topics = {t for t, _ in wanted}
        known = {tp for t in topics for tp, part in self._partitions(t) if part is not None}
        offsets = {tp: o for tp, o in wanted.items() if tp in known}
        if offsets:  # the KV refuses it while the group holds a grant: never mixed
            await self.kv.write_group_offsets(msg.group, offsets)
        skipped = [{"topic": t, "partition": p} for t, p in sorted(set(wanted) - known)]
        return c.ProgressCommitResponse(len(offsets), skipped)


def _hw(part: Partition) -> int | None:
    hw = part.status.hw
    return None if hw < 0 else hw


def _target(
    msg: c.ResetOffsetsRequest, part: Partition | None, current: int | None, given: int | None
) -> int | None:
    """The reset target of one partition, clamped to [log start, HW] when those are known."""
    hw = None if part is None else _hw(part)
    start = 0 if part is None else max(0, part.status.log_start_offset)
    target: int | None
    match msg.mode:
        case "earliest":
            target = start
        case "latest":
            target = hw if hw is not None else None
        case "offset":
            target = msg.value
        case "shift-by":
            target = None if current is None else current + msg.value
        case _:  # to-datetime, by-duration: the client resolved them at the leaders,
            return given  # whose offsets are newer than the HW the SC last heard of
    if target is None:
        return None
    target = max(start, target)
    return min(hw, target) if hw is not None else target
