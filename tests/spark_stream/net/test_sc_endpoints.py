"""SC endpoint lists and following a standby's ``NotActiveError`` (pure)."""

from __future__ import annotations

import asyncio

import pytest

from spark_stream.errors import (
    ConnectionClosedError,
    InvalidConfigError,
    NotActiveError,
    NotLeaderError,
)
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import (
    ActiveSc,
    ScEndpoints,
    active_from,
    not_active,
    parse_endpoints,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("h:1", (Endpoint("h", 1),)),
        ("h:1, g:2 ,h:1", (Endpoint("h", 1), Endpoint("g", 2))),
        ("[::1]:9003,h:1,", (Endpoint("::1", 9003), Endpoint("h", 1))),
    ],
)
def test_parse_endpoints(text: str, expected: tuple[Endpoint, ...]) -> None:
    assert parse_endpoints(text) == expected


@pytest.mark.parametrize("text", ["", " , ", "h:1,nope", "h:0"])
def test_bad_lists_are_refused(text: str) -> None:
    with pytest.raises(InvalidConfigError, match="sc_endpoint"):
        parse_endpoints(text, what="sc_endpoint")


def test_not_active_round_trips_the_active_addresses() -> None:
    active = ActiveSc("127.0.0.1:9003", "127.0.0.1:9004")
    error = not_active(active)
    assert isinstance(error, NotActiveError) and error.retriable
    assert active_from(error) == active
    assert active_from(not_active(None)) is None
    assert active_from(NotLeaderError("active SC: public=a:1 private=a:2")) is None
    assert ActiveSc.parse(active.holder()) == active
    assert ActiveSc.parse("") is None and ActiveSc.parse("x,y") is None


def test_endpoints_advance_and_follow() -> None:
    eps = ScEndpoints.parse("a:1,b:1")
    assert eps.current == Endpoint("a", 1)
    assert eps.advance() == Endpoint("b", 1)
    assert eps.advance() == Endpoint("a", 1)
    named = not_active(ActiveSc("b:1", "b:2"))
    assert eps.follow(named) and eps.current == Endpoint("b", 1)
    assert not eps.follow(NotActiveError("no active SC")) and eps.current == Endpoint("b", 1)
    # An address not configured is learned.
    assert eps.follow(not_active(ActiveSc("c:1", "c:2"))) and eps.current == Endpoint("c", 1)
    assert eps.all == (Endpoint("a", 1), Endpoint("b", 1), Endpoint("c", 1))
    private = ScEndpoints.parse("a:2", private=True)
    assert private.follow(named) and private.current == Endpoint("b", 2)


def test_open_first_tries_each_address_from_the_current_one() -> None:
    endpoints = ScEndpoints.parse("a:1,b:2,c:3")
    tried: list[str] = []

    async def refuse_all_but_c(at: Endpoint) -> str:
        tried.append(str(at))
        if at.host != "c":
            raise ConnectionClosedError(f"{at} refused")
        return f"connected to {at}"

    assert asyncio.run(endpoints.open_first(refuse_all_but_c)) == "connected to c:3"
    assert tried == ["a:1", "b:2", "c:3"]
    assert endpoints.current == Endpoint("c", 3)  # the next call starts there

    async def refuse(at: Endpoint) -> str:
        raise ConnectionClosedError(f"{at} refused")

    with pytest.raises(ConnectionClosedError, match="b:2 refused"):
        asyncio.run(endpoints.open_first(refuse))  # c, a, then b: the last one's error
