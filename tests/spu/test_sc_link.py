"""SC link helpers."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidRequestError
from spu.sc_link import parse_endpoint


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("127.0.0.1:9004", ("127.0.0.1", 9004)),
        ("sc.local:1", ("sc.local", 1)),
        ("[::1]:9004", ("[::1]", 9004)),
    ],
)
def test_parse_endpoint(endpoint: str, expected: tuple[str, int]) -> None:
    assert parse_endpoint(endpoint) == expected


@pytest.mark.parametrize("endpoint", ["9004", ":9004", "host:", "host:port", "host:70000"])
def test_parse_endpoint_refuses(endpoint: str) -> None:
    with pytest.raises(InvalidRequestError, match="host:port"):
        parse_endpoint(endpoint)
