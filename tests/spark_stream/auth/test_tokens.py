"""Client tokens: signing, verification, grants (pure, no servers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.auth import (
    Claims,
    Grant,
    Permission,
    load_key,
    new_key,
    parse_grant,
    sign,
    verify,
    write_key,
)
from spark_stream.errors import AuthenticationError, InvalidConfigError, PermissionDeniedError

P, C, A = Permission.PRODUCE, Permission.CONSUME, Permission.ADMIN
KEY = bytes(range(32))


def claims(*grants: str, expires_at: float | None = None) -> Claims:
    return Claims("alice", tuple(parse_grant(g) for g in grants), expires_at, "id-1")


def test_a_signed_token_verifies_to_its_claims() -> None:
    original = claims("orders-*=produce,consume", "*=admin", expires_at=2000.0)
    assert verify(sign(original, KEY), KEY, now=1999.0) == original


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "not a client token"),
        ("fv2.a.b", "not a client token"),
        ("fv1.only-two", "not a client token"),
        ("fv1.!!!.abc", "not signed by this cluster's key"),
        ("fv1.e30.AAAA", "not signed by this cluster's key"),
    ],
)
def test_malformed_tokens_are_refused(token: str, message: str) -> None:
    with pytest.raises(AuthenticationError, match=message):
        verify(token, KEY, now=0.0)


def test_a_token_of_another_key_or_with_changed_claims_is_refused() -> None:
    token = sign(claims("orders=consume"), KEY)
    with pytest.raises(AuthenticationError, match="not signed by this cluster's key"):
        verify(token, bytes(32), now=0.0)
    prefix, _, mac = token.split(".")
    forged = sign(claims("*=admin"), bytes(32)).split(".")[1]
    with pytest.raises(AuthenticationError, match="not signed by this cluster's key"):
        verify(f"{prefix}.{forged}.{mac}", KEY, now=0.0)


def test_an_expired_token_is_refused_naming_its_principal() -> None:
    token = sign(claims("orders=consume", expires_at=100.0), KEY)
    assert verify(token, KEY, now=99.9).principal == "alice"
    with pytest.raises(AuthenticationError, match="'alice' has expired"):
        verify(token, KEY, now=100.0)


@pytest.mark.parametrize(
    ("grants", "topic", "permission", "allowed"),
    [
        (["orders=produce"], "orders", P, True),
        (["orders=produce"], "orders", C, False),
        (["orders=produce"], "orders-eu", P, False),
        (["orders-*=consume"], "orders-eu", C, True),
        (["orders-*=consume"], "orders", C, False),
        (["orders=admin"], "orders", P, True),  # admin implies produce and consume
        (["orders=admin"], "orders", C, True),
        (["orders=admin"], "other", A, False),
        (["*=consume"], "anything", C, True),
        (["a=produce", "b=consume"], "b", C, True),
        ([], "orders", C, False),
    ],
)
def test_grants_allow(grants: list[str], topic: str, permission: Permission, allowed: bool) -> None:
    assert claims(*grants).allows(topic, permission) is allowed


def test_a_refusal_names_the_principal_the_permission_and_the_topic() -> None:
    with pytest.raises(PermissionDeniedError) as info:
        claims("orders=produce").check("orders", C)
    assert str(info.value) == (
        "principal 'alice' lacks the consume permission on topic 'orders' "
        "(its grants: orders=produce)"
    )
    assert info.value.code == 121 and not info.value.retriable


def test_cluster_admin_is_admin_on_star_only() -> None:
    claims("*=admin").check_cluster_admin("REGISTER_SPU")
    for grants in (["orders=admin"], ["*=produce,consume"], ["o*=admin"]):
        with pytest.raises(PermissionDeniedError, match="needed to REGISTER_SPU"):
            claims(*grants).check_cluster_admin("REGISTER_SPU")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("orders=produce", Grant("orders", frozenset({P}))),
        (" orders-* = produce, consume ", Grant("orders-*", frozenset({P, C}))),
        ("*=admin", Grant("*", frozenset({A}))),
    ],
)
def test_parse_grant(text: str, expected: Grant) -> None:
    assert parse_grant(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("orders", "expected PATTERN=PERMISSIONS"),
        ("=produce", "expected PATTERN=PERMISSIONS"),
        ("orders=write", "permissions are produce, consume, admin"),
        ("orders=", "names no permission"),
    ],
)
def test_parse_grant_refuses(text: str, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        parse_grant(text)


def test_key_file_round_trip_and_refusals(tmp_path: Path) -> None:
    key = new_key()
    path = tmp_path / "auth" / "cluster.key"
    write_key(path, key)
    assert load_key(path) == key
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text("not hex\n")
    with pytest.raises(InvalidConfigError, match="not a hex key"):
        load_key(path)
    path.write_text("abcd\n")
    with pytest.raises(InvalidConfigError, match="shorter than 16 bytes"):
        load_key(path)
    with pytest.raises(InvalidConfigError, match="auth key file"):
        load_key(tmp_path / "missing.key")
