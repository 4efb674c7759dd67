"""Client authentication and authorisation: signed tokens with per-topic grants.

``tokens`` holds the token format and grants, ``rules`` what each public api needs,
``guard`` wraps a server's dispatch table so every request is checked. Off unless a
server is given the cluster key (``auth_key_file``): then a client presents a token
once per connection (``AUTHENTICATE``) and each request is checked against its grants.
"""

from __future__ import annotations

from spark_stream.auth.tokens import (
    CLUSTER,
    Claims,
    Grant,
    Permission,
    grants_of,
    load_key,
    new_key,
    parse_grant,
    sign,
    verify,
    write_key,
)

__all__ = [
    "CLUSTER",
    "Claims",
    "Grant",
    "Permission",
    "grants_of",
    "load_key",
    "new_key",
    "parse_grant",
    "sign",
    "verify",
    "write_key",
]
