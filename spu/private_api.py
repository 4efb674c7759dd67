"""Handlers of the SPU private api (port 9006): one per api, dispatched by api key.

Every connection authenticates first (``PEER_HELLO``, ``PEER_AUTH``: ``spu.peer_keys``);
a replication message before that, or for another SPU than the authenticated one, gets
``UnauthorizedError`` (logged) and the connection closes. ``FOLLOWER_STREAM`` opens a
``FollowerSession`` (``spu.follower_session``) for the follower; ``FOLLOWER_LEO`` folds
the follower's LEO reports into the leader controllers, each clamped to what that
session sent the follower: a report above it (a forged "caught up") is logged and
never counts, so ``acks=all`` cannot succeed on records only the leader holds. See
``spu.private_messages`` for the conversation.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping

from spark_stream.errors import UnauthorizedError
from spark_stream.net.server import ConnContext, Handler
from spark_stream.protocol import ApiKey, Request
from spu.follower_session import FollowerSession, LeaderDirectory
from spu.peer_keys import LeaderHandshake, PeerKeyring
from spu.private_messages import (
    FollowerLeoRequest,
    FollowerLeoResponse,
    FollowerPush,
    FollowerStreamRequest,
    PeerAuthRequest,
    PeerAuthResponse,
    PeerHelloRequest,
    PeerHelloResponse,
)

__all__ = ["private_routes", "clamp_report"]

logger = logging.getLogger(__name__)

_HANDSHAKE = "peer_handshake"
_SESSION = "follower_session"


def clamp_report(reported: int, sent: int | None) -> int | None:
    """The LEO a leader takes from a report: at most what it sent (None: nothing sent)."""
    if sent is None:
        return None
    return min(reported, sent)


def private_routes(
    directory: LeaderDirectory, keys: PeerKeyring, spu_id: int
) -> Mapping[int, Handler]:
    """The private server's dispatch table over ``directory``'s leader controllers.

    Args:
        directory: the leader controllers.
        keys: the peer keys the SC pushed.
        spu_id: this SPU.
    """

    def handshake(ctx: ConnContext) -> LeaderHandshake:
        state = ctx.state.get(_HANDSHAKE)
        if not isinstance(state, LeaderHandshake):
            state = ctx.state[_HANDSHAKE] = LeaderHandshake(spu_id, keys)
        return state

    def refuse(ctx: ConnContext, exc: UnauthorizedError) -> UnauthorizedError:
        logger.warning("peer refused peer=%s: %s", ctx.peer, exc)
        ctx.close()
        return exc

    def authenticated(ctx: ConnContext, claimed: int) -> None:
        try:
            handshake(ctx).check(claimed)
        except UnauthorizedError as exc:
            raise refuse(ctx, exc) from None

    async def peer_hello(request: Request, ctx: ConnContext) -> PeerHelloResponse:
        msg = request.message()
        assert isinstance(msg, PeerHelloRequest)
        try:
            return handshake(ctx).hello(msg)
        except UnauthorizedError as exc:
            raise refuse(ctx, exc) from None

    async def peer_auth(request: Request, ctx: ConnContext) -> PeerAuthResponse:
        msg = request.message()
        assert isinstance(msg, PeerAuthRequest)
        try:
            reply = handshake(ctx).auth(msg)
        except UnauthorizedError as exc:
            raise refuse(ctx, exc) from None
        logger.info("peer authenticated spu=%d peer=%s", msg.spu_id, ctx.peer)
        return reply

    async def follower_stream(request: Request, ctx: ConnContext) -> AsyncIterator[FollowerPush]:
        msg = request.message()
        assert isinstance(msg, FollowerStreamRequest)
        authenticated(ctx, msg.spu_id)
        session = FollowerSession(directory, msg.spu_id, msg.offsets(), msg.max_bytes)
        ctx.state["follower"] = msg.spu_id
        ctx.state[_SESSION] = session
        return session.pushes()

    async def follower_leo(request: Request, ctx: ConnContext) -> FollowerLeoResponse:
        msg = request.message()
        assert isinstance(msg, FollowerLeoRequest)
        authenticated(ctx, msg.spu_id)
        session = ctx.state.get(_SESSION)
        ignored = []
        for name, reported in msg.leos.items():
            sent = session.sent(name) if isinstance(session, FollowerSession) else None
            leo = clamp_report(reported, sent)
            if leo is not None and leo < reported:
                logger.warning(
                    "follower report above what was sent, clamped partition=%s follower=%d "
                    "reported=%d sent=%d",
                    name,
                    msg.spu_id,
                    reported,
                    leo,
                )
            leader = directory.leader(name)
            if leo is None or leader is None or not leader.follower_report(msg.spu_id, leo):
                ignored.append(name)
        return FollowerLeoResponse(ignored)

    return {
        ApiKey.PEER_HELLO: peer_hello,
        ApiKey.PEER_AUTH: peer_auth,
        ApiKey.FOLLOWER_STREAM: follower_stream,
        ApiKey.FOLLOWER_LEO: follower_leo,
    }
