"""``host:port`` endpoints: the one parser for every address a user, a file or a peer gives.

IPv6 literals are written in brackets (``[::1]:9003``) and come back without them, as
sockets want them; a bare IPv6 literal is refused, since its last colon is ambiguous.
"""

from __future__ import annotations

from typing import NamedTuple

from spark_stream.errors import InvalidConfigError

__all__ = ["Endpoint", "parse_endpoint"]


class Endpoint(NamedTuple):
    """A parsed endpoint; unpacks as ``host, port`` and prints as ``host:port``."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_endpoint(text: str, *, what: str = "endpoint") -> Endpoint:
    """Split ``"host:port"`` (``"[v6]:port"`` for IPv6) into host and port.

    Args:
        text: the endpoint as written.
        what: how errors name it (``"option 'endpoint'"``, ``"FLUVIO_SPU_SC_ENDPOINT"``).

    Raises:
        InvalidConfigError: no host, no port, a port outside 1..65535, or an IPv6
            literal without brackets.
    """
    host, sep, port_text = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        bracketed = True
    else:
        bracketed = False
    valid = (
        bool(sep and host)
        and port_text.isdigit()
        and 0 < int(port_text) < 65536
        and (bracketed or ":" not in host)
        and not any(c in host for c in "[] /")
    )
    if not valid:
        raise InvalidConfigError(f"{what} must be 'host:port' (IPv6: '[::1]:port'), got {text!r}")
    return Endpoint(host, int(port_text))
