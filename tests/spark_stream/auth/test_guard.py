"""``Guard``: a real ``Server`` on loopback with its table guarded, clients with and
without tokens (no SC or SPU: one handler stands for any api)."""

from __future__ import annotations

import asyncio

import pytest

from spark_stream.auth import Claims, parse_grant, sign
from spark_stream.auth.guard import Guard
from spark_stream.errors import AuthenticationError, PermissionDeniedError
from spark_stream.net.connection import Connection
from spark_stream.net.server import ConnContext, Server
from spark_stream.protocol import ApiKey, Request
from spark_stream.protocol import control as c

KEY = b"k" * 32


async def _delete(request: Request, ctx: ConnContext) -> c.DeleteTopicResponse:
    return c.DeleteTopicResponse(7)


def _token(*grants: str, expires_at: float | None = None) -> str:
    return sign(Claims("p", tuple(parse_grant(g) for g in grants), expires_at), KEY)


def run_against(guard: Guard, token: str | None, name: str = "orders") -> int:
    async def scenario() -> int:
        async with Server(guard.routes({ApiKey.DELETE_TOPIC: _delete})) as server:
            conn = await Connection.open("127.0.0.1", server.port, token=token)
            async with conn:
                reply = await conn.call(c.DeleteTopicRequest(name), timeout=10)
                assert isinstance(reply, c.DeleteTopicResponse)
                return reply.revision

    return asyncio.run(scenario())


def test_off_serves_everyone_and_accepts_any_token() -> None:
    assert run_against(Guard(None), None) == 7
    assert run_against(Guard(None), "fv1.not.checked") == 7


def test_on_checks_the_token_and_its_grants() -> None:
    guard = Guard(KEY)
    assert run_against(guard, _token("orders=admin")) == 7
    with pytest.raises(AuthenticationError, match="DELETE_TOPIC refused: this cluster requires"):
        run_against(guard, None)
    with pytest.raises(AuthenticationError, match="not signed by this cluster's key"):
        run_against(guard, sign(Claims("p", ()), b"x" * 32))
    with pytest.raises(PermissionDeniedError, match="admin permission on topic 'orders'"):
        run_against(guard, _token("orders=produce,consume"))
    with pytest.raises(PermissionDeniedError, match="topic 'other'"):
        run_against(guard, _token("orders=admin"), name="other")


def test_expiry_is_checked_on_every_request_not_only_at_authentication() -> None:
    now = [100.0]
    guard = Guard(KEY, clock=lambda: now[0])
    token = _token("*=admin", expires_at=200.0)

    async def scenario() -> None:
        async with (
            Server(guard.routes({ApiKey.DELETE_TOPIC: _delete})) as server,
            await Connection.open("127.0.0.1", server.port, token=token) as conn,
        ):
            await conn.call(c.DeleteTopicRequest("t"), timeout=10)
            now[0] = 200.0
            with pytest.raises(AuthenticationError, match="'p' has expired"):
                await conn.call(c.DeleteTopicRequest("t"), timeout=10)

    asyncio.run(scenario())
