"""A server's dispatch table with every request checked against the connection's token.

``Guard(key).routes(table)`` returns ``table`` plus the ``AUTHENTICATE`` handler and, when
``key`` is set, every handler wrapped: the request is refused with
``AuthenticationError`` until the connection presented a valid token, and with
``PermissionDeniedError`` when the token's grants lack what ``rules`` says the request
needs. The token's claims are kept in ``ConnContext.state`` (one HMAC per connection,
a dict lookup and a glob match per request); its expiry is checked on every request.
Without a key (auth off) the table is unchanged and ``AUTHENTICATE`` accepts any token,
so a client configured with one works against a cluster that does not check them.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Mapping

from spark_stream.auth.rules import check
from spark_stream.auth.tokens import Claims, verify
from spark_stream.errors import AuthenticationError
from spark_stream.net.server import ConnContext, Handler, Reply, Route, Stream
from spark_stream.protocol import ApiKey, Request, api_name
from spark_stream.protocol import control as c

__all__ = ["Guard", "CLAIMS"]

log = logging.getLogger(__name__)

CLAIMS = "auth.claims"
"""The ``ConnContext.state`` key of the connection's verified claims."""


class Guard:
    """Checks the requests of one server's public port.

    Args:
        key: the cluster key; None turns checking off.
        name: the server, in log lines.
        clock: seconds since the epoch (tokens' expiry).
    """

    def __init__(
        self, key: bytes | None, *, name: str = "", clock: Callable[[], float] = time.time
    ) -> None:
        self.key = key
        self.name = name
        self.clock = clock

    @property
    def enabled(self) -> bool:
        """Whether tokens are checked."""
        return self.key is not None

    def routes(self, table: Mapping[int, Handler | Route]) -> dict[int, Handler | Route]:
        """``table`` plus ``AUTHENTICATE``, every handler checked when enabled."""
        routes: dict[int, Handler | Route] = {}
        for api_key, entry in table.items():
            if not self.enabled:
                routes[api_key] = entry
            elif isinstance(entry, Route):
                routes[api_key] = Route(
                    self._checked(api_key, entry.handler), entry.min_version, entry.max_version
                )
            else:
                routes[api_key] = self._checked(api_key, entry)
        routes[ApiKey.AUTHENTICATE] = self._authenticate
        return routes

    async def _authenticate(self, request: Request, ctx: ConnContext) -> c.AuthenticateResponse:
        msg = request.message()
        assert isinstance(msg, c.AuthenticateRequest)
        if self.key is None:
            return c.AuthenticateResponse("", False)
        try:
            claims = verify(msg.token, self.key, self.clock())
        except AuthenticationError as exc:
            ctx.state.pop(CLAIMS, None)
            log.warning("client refused server=%s peer=%s reason=%s", self.name, ctx.peer, exc)
            raise
        ctx.state[CLAIMS] = claims
        log.info(
            "client authenticated server=%s peer=%s principal=%s",
            self.name,
            ctx.peer,
            claims.principal,
        )
        return c.AuthenticateResponse(claims.principal, True)

    def claims(self, ctx: ConnContext, api_key: int) -> Claims:
        """The connection's claims, still valid.

        Raises:
            AuthenticationError: no token presented on this connection, or it expired.
        """
        claims = ctx.state.get(CLAIMS)
        if not isinstance(claims, Claims):
            raise AuthenticationError(
                f"{api_name(api_key)} refused: this cluster requires a client token and "
                "none was presented (the profile's token, FLUVIO_TOKEN, or the Spark option "
                "'token')"
            )
        if claims.expires_at is not None and self.clock() >= claims.expires_at:
            raise AuthenticationError(f"the token of principal {claims.principal!r} has expired")
        return claims

    def _checked(self, api_key: int, handler: Handler) -> Handler:
        async def checked(request: Request, ctx: ConnContext) -> Reply | Stream:
            check(self.claims(ctx, api_key), api_key, request.message())
            outcome = handler(request, ctx)
            return await outcome if inspect.isawaitable(outcome) else outcome

        return checked
