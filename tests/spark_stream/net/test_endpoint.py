"""The endpoint parser: what it accepts, what it refuses, how it prints."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.net.endpoint import Endpoint, parse_endpoint


@pytest.mark.parametrize(
    ("text", "host", "port", "printed"),
    [
        ("127.0.0.1:9004", "127.0.0.1", 9004, "127.0.0.1:9004"),
        ("sc.local:1", "sc.local", 1, "sc.local:1"),
        (" localhost:65535 ", "localhost", 65535, "localhost:65535"),
        ("[::1]:9004", "::1", 9004, "[::1]:9004"),
        ("[fe80::1%eth0]:9003", "fe80::1%eth0", 9003, "[fe80::1%eth0]:9003"),
    ],
)
def test_parses_host_and_port(text: str, host: str, port: int, printed: str) -> None:
    endpoint = parse_endpoint(text)
    assert endpoint == Endpoint(host, port)
    assert (endpoint.host, endpoint.port) == (host, port)
    assert str(endpoint) == printed
    assert parse_endpoint(str(endpoint)) == endpoint


@pytest.mark.parametrize(
    "text",
    ["9004", ":9004", "host:", "host:port", "host:0", "host:70000", "::1:9004", "[]:1",
     "a b:1", "host:-1", ""],
)  # fmt: skip
def test_refuses_what_is_not_host_port(text: str) -> None:
    with pytest.raises(InvalidConfigError, match="must be 'host:port'"):
        parse_endpoint(text)


def test_errors_name_what_was_parsed() -> None:
    with pytest.raises(InvalidConfigError, match="^option 'endpoint' must be"):
        parse_endpoint("nope", what="option 'endpoint'")
