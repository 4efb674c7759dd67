"""Handlers of the SPU private api (port 9006): one per api, dispatched by api key.

``FOLLOWER_STREAM`` opens a ``FollowerSession`` (``spu.follower_session``) for a
follower SPU; ``FOLLOWER_LEO`` folds the follower's LEO reports into the leader
controllers. See ``spu.private_messages`` for the conversation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from spark_stream.net.server import ConnContext, Handler
from spark_stream.protocol import ApiKey, Request
from spu.follower_session import FollowerSession, LeaderDirectory
from spu.private_messages import (
    FollowerLeoRequest,
    FollowerLeoResponse,
    FollowerPush,
    FollowerStreamRequest,
)

__all__ = ["private_routes"]


def private_routes(directory: LeaderDirectory) -> Mapping[int, Handler]:
    """The private server's dispatch table over ``directory``'s leader controllers."""

    async def follower_stream(request: Request, ctx: ConnContext) -> AsyncIterator[FollowerPush]:
        msg = request.message()
        assert isinstance(msg, FollowerStreamRequest)
        session = FollowerSession(directory, msg.spu_id, msg.offsets(), msg.max_bytes)
        ctx.state["follower"] = msg.spu_id
        return session.pushes()

    async def follower_leo(request: Request, ctx: ConnContext) -> FollowerLeoResponse:
        msg = request.message()
        assert isinstance(msg, FollowerLeoRequest)
        ignored = []
        for name, leo in msg.leos.items():
            leader = directory.leader(name)
            if leader is None or not leader.follower_report(msg.spu_id, leo):
                ignored.append(name)
        return FollowerLeoResponse(ignored)

    return {
        ApiKey.FOLLOWER_STREAM: follower_stream,
        ApiKey.FOLLOWER_LEO: follower_leo,
    }
