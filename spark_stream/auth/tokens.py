"""Client tokens: who the client is and what it may do to which topics, signed by the cluster.

Theory of operation. A token is ``fv1.<claims>.<mac>``: the claims (principal, grants,
expiry, id) as base64url JSON and an HMAC-SHA256 of them under the cluster key, a random
secret the SC and every SPU read from ``auth_key_file``. A server checks a token with one
HMAC and no round trip, and keeps nothing per token: the grants travel inside it. A
grant maps a topic pattern (``fnmatch`` glob: ``orders``, ``orders-*``, ``*``) to
permissions; ``admin`` on a pattern implies ``produce`` and ``consume`` on it, and admin
on ``*`` is cluster admin (SPUs, SPU groups, group admin without a topic).

Pure: no I/O but ``load_key``/``write_key`` (the key file), no clock but the ``now``
argument of ``verify``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from spark_stream.errors import AuthenticationError, InvalidConfigError, PermissionDeniedError

__all__ = [
    "Permission",
    "Grant",
    "Claims",
    "parse_grant",
    "sign",
    "verify",
    "new_key",
    "load_key",
    "write_key",
    "CLUSTER",
]

PREFIX = "fv1"
CLUSTER = "*"
"""The pattern whose ``admin`` grant is cluster admin."""
_KEY_BYTES = 32


class Permission(StrEnum):
    """What a grant allows on the topics its pattern matches."""

    PRODUCE = "produce"
    CONSUME = "consume"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Grant:
    """Permissions on the topics matching ``pattern`` (an ``fnmatch`` glob, case-sensitive)."""

    pattern: str
    permissions: frozenset[Permission]

    def covers(self, topic: str, permission: Permission) -> bool:
        """Whether this grant allows ``permission`` on ``topic`` (admin implies the rest)."""
        wanted = permission in self.permissions or Permission.ADMIN in self.permissions
        return wanted and fnmatchcase(topic, self.pattern)

    def __str__(self) -> str:
        return f"{self.pattern}={','.join(sorted(self.permissions))}"


@dataclass(frozen=True, slots=True)
class Claims:
    """What a token says: who, what on which topics, until when.

    Attributes:
        principal: the name the token was made for (logged, named in refusals).
        grants: what it may do.
        expires_at: seconds since the epoch after which it is refused; None: never.
        token_id: a random id, so two tokens with the same grants differ.
    """

    principal: str
    grants: tuple[Grant, ...]
    expires_at: float | None = None
    token_id: str = field(default_factory=lambda: secrets.token_hex(8))

    def allows(self, topic: str, permission: Permission) -> bool:
        """Whether some grant allows ``permission`` on ``topic``."""
        return any(g.covers(topic, permission) for g in self.grants)

    def check(self, topic: str, permission: Permission) -> None:
        """Raise unless ``permission`` on ``topic`` is granted.

        Raises:
            PermissionDeniedError: naming the principal, the permission and the topic.
        """
        if not self.allows(topic, permission):
            raise PermissionDeniedError(
                f"principal {self.principal!r} lacks the {permission} permission on "
                f"topic {topic!r} (its grants: {self.describe()})"
            )

    def check_cluster_admin(self, what: str) -> None:
        """Raise unless the token has ``admin`` on ``*``.

        Raises:
            PermissionDeniedError: naming the principal and ``what`` was refused.
        """
        if not any(g.pattern == CLUSTER and Permission.ADMIN in g.permissions for g in self.grants):
            raise PermissionDeniedError(
                f"principal {self.principal!r} lacks the admin permission on topic '*' "
                f"(cluster admin), needed to {what} (its grants: {self.describe()})"
            )

    def describe(self) -> str:
        """The grants as ``pattern=perm,perm; ...`` (``none`` when empty)."""
        return "; ".join(str(g) for g in self.grants) or "none"

    def to_json(self) -> dict[str, Any]:
        """The claims as the token carries them."""
        return {
            "sub": self.principal,
            "grants": [[g.pattern, sorted(g.permissions)] for g in self.grants],
            "exp": self.expires_at,
            "jti": self.token_id,
        }

    @classmethod
    def from_json(cls, data: object) -> Claims:
        """Claims from a token's JSON.

        Raises:
            AuthenticationError: the JSON is not a claims object.
        """
        try:
            assert isinstance(data, dict)
            grants = data["grants"]
            assert isinstance(grants, list) and isinstance(data["sub"], str)
            exp = data.get("exp")
            assert exp is None or isinstance(exp, int | float)
            return cls(
                data["sub"],
                tuple(
                    Grant(str(p), frozenset(Permission(x) for x in perms)) for p, perms in grants
                ),
                exp,
                str(data.get("jti", "")),
            )
        except (AssertionError, KeyError, ValueError, TypeError):
            raise AuthenticationError("the token's claims are malformed") from None


def parse_grant(text: str) -> Grant:
    """``PATTERN=PERM[,PERM...]`` (``orders-*=produce,consume``) as a grant.

    Raises:
        InvalidConfigError: no ``=``, an empty pattern, or an unknown permission.
    """
    pattern, sep, perms = text.partition("=")
    pattern = pattern.strip()
    if not sep or not pattern:
        raise InvalidConfigError(
            f"grant {text!r}: expected PATTERN=PERMISSIONS, e.g. 'orders-*=produce,consume'"
        )
    try:
        found = frozenset(Permission(p.strip()) for p in perms.split(",") if p.strip())
    except ValueError:
        known = ", ".join(p.value for p in Permission)
        raise InvalidConfigError(f"grant {text!r}: permissions are {known}") from None
    if not found:
        raise InvalidConfigError(f"grant {text!r} names no permission")
    return Grant(pattern, found)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, body: str) -> bytes:
    return hmac.new(key, f"{PREFIX}.{body}".encode("ascii"), hashlib.sha256).digest()


def sign(claims: Claims, key: bytes) -> str:
    """The token for ``claims`` under the cluster ``key``."""
    body = _b64(json.dumps(claims.to_json(), sort_keys=True, separators=(",", ":")).encode())
    return f"{PREFIX}.{body}.{_b64(_mac(key, body))}"


def verify(token: str, key: bytes, now: float) -> Claims:
    """The claims of ``token`` after checking its signature and expiry.

    Raises:
        AuthenticationError: not a token of this format, signed with another key, or
            expired (the message says which, never the token itself).
    """
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise AuthenticationError(f"not a client token (expected '{PREFIX}.<claims>.<mac>')")
    try:
        mac = _unb64(parts[2])
        body = _unb64(parts[1])
    except (binascii.Error, ValueError):
        raise AuthenticationError("the token is not valid base64url") from None
    if not hmac.compare_digest(mac, _mac(key, parts[1])):
        raise AuthenticationError("the token is not signed by this cluster's key")
    try:
        claims = Claims.from_json(json.loads(body))
    except ValueError:
        raise AuthenticationError("the token's claims are not JSON") from None
    if claims.expires_at is not None and now >= claims.expires_at:
        raise AuthenticationError(f"the token of principal {claims.principal!r} has expired")
    return claims


def new_key() -> bytes:
    """A fresh random cluster key."""
    return secrets.token_bytes(_KEY_BYTES)


def write_key(path: Path, key: bytes) -> None:
    """Write ``key`` (hex) to ``path``, readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(key.hex() + "\n")


def load_key(path: str | os.PathLike[str]) -> bytes:
    """The cluster key in ``path`` (hex, as ``write_key`` writes it).

    Raises:
        InvalidConfigError: unreadable, not hex, or shorter than 16 bytes.
    """
    try:
        text = Path(path).read_text().strip()
        key = bytes.fromhex(text)
    except OSError as exc:
        raise InvalidConfigError(f"auth key file {path}: {exc}") from exc
    except ValueError:
        raise InvalidConfigError(f"auth key file {path}: not a hex key") from None
    if len(key) < 16:
        raise InvalidConfigError(f"auth key file {path}: the key is shorter than 16 bytes")
    return key


def grants_of(texts: Iterable[str]) -> tuple[Grant, ...]:
    """``parse_grant`` of each text."""
    return tuple(parse_grant(t) for t in texts)


__all__ += ["grants_of"]
