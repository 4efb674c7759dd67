"""The profile file and the one endpoint resolution order (no servers).

Order: an explicit endpoint > ``FLUVIO_ENDPOINT`` > the profile > a ``NotFoundError``
naming all three ways.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.client.profile import (
    Profile,
    delete_profile,
    load_profile,
    load_profiles,
    resolve_endpoint,
    resolve_tls,
    save_profile,
    switch_profile,
)
from spark_stream.errors import InvalidConfigError, NotFoundError
from spark_stream.net.tls import TlsConfig

EXPLICIT = "127.0.0.1:1111"
FROM_ENV = "127.0.0.1:2222"
IN_PROFILE = "127.0.0.1:3333"


@pytest.fixture
def profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A profile naming ``IN_PROFILE``, at ``FLUVIO_PROFILE``; ``FLUVIO_ENDPOINT`` unset."""
    path = save_profile(Profile(endpoint=IN_PROFILE), tmp_path / "profile.json")
    monkeypatch.setenv("FLUVIO_PROFILE", str(path))
    monkeypatch.delenv("FLUVIO_ENDPOINT", raising=False)
    return path


@pytest.mark.parametrize(
    ("explicit", "env", "with_profile", "expected"),
    [
        (EXPLICIT, FROM_ENV, True, EXPLICIT),  # explicit beats everything
        (EXPLICIT, None, False, EXPLICIT),  # and needs nothing else
        (None, FROM_ENV, True, FROM_ENV),  # the variable beats the profile
        (None, FROM_ENV, False, FROM_ENV),  # and needs no profile
        (None, None, True, IN_PROFILE),  # the profile last
        (None, "", True, IN_PROFILE),  # an empty variable counts as unset
        ("", FROM_ENV, True, FROM_ENV),  # so does an empty explicit endpoint
        (" [::1]:9003 ", None, False, "[::1]:9003"),  # as the one parser reads it
    ],
)
def test_resolution_order(
    profile: Path,
    monkeypatch: pytest.MonkeyPatch,
    explicit: str | None,
    env: str | None,
    with_profile: bool,
    expected: str,
) -> None:
    if env is not None:
        monkeypatch.setenv("FLUVIO_ENDPOINT", env)
    if not with_profile:
        profile.unlink()
    assert resolve_endpoint(explicit) == expected


def test_nothing_to_go_on_names_all_three_ways(profile: Path) -> None:
    profile.unlink()
    with pytest.raises(NotFoundError) as exc:
        resolve_endpoint(None)
    message = str(exc.value)
    for way in ("--endpoint", "option('endpoint'", "FLUVIO_ENDPOINT", "fluvio cluster start"):
        assert way in message
    assert str(profile) in message


def test_an_invalid_variable_is_named_and_not_skipped(
    profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo in ``FLUVIO_ENDPOINT`` fails even though the profile would have worked."""
    monkeypatch.setenv("FLUVIO_ENDPOINT", "localhost")
    with pytest.raises(InvalidConfigError, match="^environment variable FLUVIO_ENDPOINT must be"):
        resolve_endpoint(None)


def test_an_invalid_explicit_endpoint_is_named_as_the_caller_says(profile: Path) -> None:
    with pytest.raises(InvalidConfigError, match="^--endpoint must be 'host:port'"):
        resolve_endpoint("nohost", what="--endpoint")


def test_a_broken_profile_is_an_invalid_config(profile: Path) -> None:
    profile.write_text('{"endpoint": "no port"}')
    with pytest.raises(InvalidConfigError, match="profile"):
        resolve_endpoint(None)
    profile.write_text("not json")
    with pytest.raises(InvalidConfigError, match="unreadable"):
        load_profile()


def test_many_profiles_one_current(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    save_profile(Profile(endpoint=IN_PROFILE, data_dir="/data"), path)
    save_profile(Profile(endpoint=EXPLICIT, name="remote"), path)  # added, now current
    profiles = load_profiles(path)
    assert profiles.current == "remote" and sorted(profiles.profiles) == ["local", "remote"]
    assert load_profile(path).endpoint == EXPLICIT
    assert switch_profile("local", path).data_dir == "/data"
    assert load_profile(path).endpoint == IN_PROFILE
    assert delete_profile("remote", path) is False  # not the current one
    assert delete_profile("local", path) is True
    with pytest.raises(NotFoundError, match="no cluster profile"):
        load_profile(path)
    with pytest.raises(NotFoundError, match=r"no profile 'nope' in .* \(profiles: none\)"):
        switch_profile("nope", path)


def test_no_current_profile_says_how_to_pick_one(
    profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_profile(Profile(endpoint=EXPLICIT, name="remote"), profile)
    delete_profile("remote", profile)
    with pytest.raises(NotFoundError, match=r"profile switch NAME` \(local\)"):
        resolve_endpoint(None)


def test_the_single_profile_shape_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    path.write_text(f'{{"endpoint": "{IN_PROFILE}", "data_dir": "/d", "name": "local"}}')
    assert load_profile(path) == Profile(endpoint=IN_PROFILE, data_dir="/d", name="local")
    save_profile(Profile(endpoint=EXPLICIT, name="other"), path)  # rewritten in the new shape
    assert sorted(load_profiles(path).profiles) == ["local", "other"]


def test_profile_tls_round_trips_and_applies_to_its_endpoint_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tls = TlsConfig(ca="/x/ca.pem", cert="/x/client.pem", key="/x/client.key")
    path = save_profile(Profile(endpoint=IN_PROFILE, tls=tls), tmp_path / "profile.json")
    monkeypatch.setenv("FLUVIO_PROFILE", str(path))
    assert load_profile(path).tls == tls
    assert resolve_tls(IN_PROFILE) == tls  # given explicitly or found: the profile's TLS
    assert resolve_tls(EXPLICIT) is None  # another cluster: plaintext unless told
    explicit = TlsConfig(ca="/y/ca.pem")
    assert resolve_tls(IN_PROFILE, explicit) == explicit


def test_a_bad_tls_entry_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    path.write_text('{"endpoint": "127.0.0.1:1", "tls": {"ca": "/c", "verify": "no"}}')
    with pytest.raises(InvalidConfigError, match="bad 'tls'"):
        load_profile(path)


def test_a_profile_with_tls_and_a_token_keeps_both(tmp_path: Path) -> None:
    tls = TlsConfig(ca="/x/ca.pem")
    path = save_profile(Profile(endpoint=IN_PROFILE, tls=tls, token="fv1.a.b"), tmp_path / "p")
    loaded = load_profile(path)
    assert (loaded.tls, loaded.token) == (tls, "fv1.a.b")


@pytest.mark.parametrize(
    ("explicit", "env", "endpoint", "expected"),
    [
        ("t-explicit", "t-env", IN_PROFILE, "t-explicit"),
        (None, "t-env", IN_PROFILE, "t-env"),
        ("", " ", IN_PROFILE, "t-profile"),  # empty counts as not given
        (None, None, IN_PROFILE, "t-profile"),
        (None, None, EXPLICIT, None),  # a profile's token never goes to another cluster
    ],
)
def test_token_resolution_order(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    explicit: str | None,
    env: str | None,
    endpoint: str,
    expected: str | None,
) -> None:
    from spark_stream.client.profile import resolve_token

    path = save_profile(Profile(endpoint=IN_PROFILE, token="t-profile"), tmp_path / "p.json")
    monkeypatch.setenv("FLUVIO_PROFILE", str(path))
    if env is None:
        monkeypatch.delenv("FLUVIO_TOKEN", raising=False)
    else:
        monkeypatch.setenv("FLUVIO_TOKEN", env)
    assert resolve_token(explicit, endpoint) == expected


def test_a_profile_token_round_trips_in_an_owner_only_file(tmp_path: Path) -> None:
    path = save_profile(Profile(endpoint=IN_PROFILE, token="fv1.a.b"), tmp_path / "p.json")
    assert load_profile(path).token == "fv1.a.b"
    assert path.stat().st_mode & 0o777 == 0o600
    save_profile(Profile(endpoint=IN_PROFILE, name="open"), path)
    assert '"token"' in path.read_text()  # the other profile keeps its token
    assert load_profiles(path).profiles["open"].token == ""
    path.write_text('{"endpoint": "127.0.0.1:1", "token": 7}')
    with pytest.raises(InvalidConfigError, match="'token' that is not a string"):
        load_profile(path)
