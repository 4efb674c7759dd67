"""Where the SC is: the client profile written by ``fluvio cluster start``, and the one
resolution order every entry point uses.

The profile file is one JSON file (``FLUVIO_PROFILE``, default
``~/.fluvio/profile.json``) holding named profiles, each a cluster's SC public endpoint
and (for a local cluster) its data directory, and which one is current, as Fluvio's
``~/.fluvio/config``: ``{"current": "local", "profiles": {"local": {"endpoint": ...,
"data_dir": ...}}}``. ``Fluvio.connect()`` with no argument, the CLI and Spark use the
current profile, so they find the cluster without being told; ``fluvio profile``
lists, switches and deletes them. A file of the earlier single-profile shape
(``{"endpoint": ..., "data_dir": ..., "name": ...}``) reads as that one profile, current.

``resolve_endpoint`` is the order, implemented once: an explicit endpoint (the argument,
``--endpoint``, the Spark ``endpoint`` option), else ``FLUVIO_ENDPOINT``, else the
current profile, else a ``NotFoundError`` naming all three. ``resolve_token`` is the same
order for the client token of a cluster with auth on (``token``: the argument, the
``--token`` flag, the Spark ``token`` option; ``FLUVIO_TOKEN``; the current profile's
``token``, used only when its endpoint is the one connected to).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from spark_stream.errors import InvalidConfigError, NotFoundError
from spark_stream.net.sc_endpoints import parse_endpoints
from spark_stream.net.tls import TlsConfig

__all__ = [
    "ENDPOINT_ENV",
    "Profile",
    "Profiles",
    "profile_path",
    "load_profiles",
    "save_profiles",
    "load_profile",
    "save_profile",
    "switch_profile",
    "delete_profile",
    "resolve_endpoint",
    "resolve_tls",
    "resolve_token",
    "TOKEN_ENV",
]

ENDPOINT_ENV = "FLUVIO_ENDPOINT"
"""The environment variable naming the SC's public ``host:port``; empty counts as unset."""
TOKEN_ENV = "FLUVIO_TOKEN"
"""The environment variable holding a client token; empty counts as unset."""


def profile_path() -> Path:
    """``$FLUVIO_PROFILE``, else ``~/.fluvio/profile.json``."""
    env = os.environ.get("FLUVIO_PROFILE")
    return Path(env) if env else Path.home() / ".fluvio" / "profile.json"


@dataclass(frozen=True, slots=True)
class Profile:
    """A cluster the client can reach.

    Attributes:
        endpoint: the SC's public ``host:port``.
        data_dir: the local cluster's data directory ('' for a remote cluster).
        name: the profile's name.
        tls: how to connect over TLS (the CA to trust, a client certificate for mutual
            TLS); None: plaintext. ``fluvio cluster start --tls`` writes it.
        token: the client token presented to a cluster with auth on ('' for none).
    """

    endpoint: str
    data_dir: str = ""
    name: str = "local"
    tls: TlsConfig | None = None
    token: str = ""


@dataclass(frozen=True, slots=True)
class Profiles:
    """Every profile of the file and the current one's name (None: none is current).

    Attributes:
        current: the name of the profile clients use.
        profiles: the profiles by name.
    """

    current: str | None = None
    profiles: dict[str, Profile] = field(default_factory=dict)

    def to_json(self) -> str:
        """The file's text."""
        doc = {
            "current": self.current,
            "profiles": {name: _profile_doc(p) for name, p in sorted(self.profiles.items())},
        }
        return json.dumps(doc, indent=2) + "\n"


def _profile_doc(profile: Profile) -> dict[str, object]:
    doc: dict[str, object] = {"endpoint": profile.endpoint, "data_dir": profile.data_dir}
    if profile.tls is not None:
        doc["tls"] = profile.tls.model_dump(exclude_defaults=True)
    if profile.token:
        doc["token"] = profile.token
    return doc


def _profile(path: Path, name: str, data: object) -> Profile:
    if not isinstance(data, dict) or not isinstance(data.get("endpoint"), str):
        raise InvalidConfigError(f"profile {path}: {name!r} has no 'endpoint'")
    parse_endpoints(data["endpoint"], what=f"profile {path}: 'endpoint'")
    tls = None
    if data.get("tls") is not None:
        try:
            tls = TlsConfig.model_validate(data["tls"])
        except ValidationError as exc:
            raise InvalidConfigError(f"profile {path}: {name!r} has a bad 'tls': {exc}") from exc
    token = data.get("token", "")
    if not isinstance(token, str):
        raise InvalidConfigError(f"profile {path}: {name!r} has a 'token' that is not a string")
    return Profile(
        endpoint=data["endpoint"],
        data_dir=str(data.get("data_dir", "")),
        name=name,
        tls=tls,
        token=token,
    )


def load_profiles(path: Path | None = None) -> Profiles:
    """Read every profile (none when the file does not exist).

    Raises:
        InvalidConfigError: the file is not a valid profile file.
    """
    path = path or profile_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return Profiles()
    except (OSError, ValueError) as exc:
        raise InvalidConfigError(f"profile {path} is unreadable: {exc}") from exc
    if isinstance(data, dict) and "profiles" not in data:  # the single-profile shape
        name = str(data.get("name", "local"))
        return Profiles(name, {name: _profile(path, name, data)})
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise InvalidConfigError(f"profile {path} has no 'endpoint'")
    profiles = {str(n): _profile(path, str(n), d) for n, d in data["profiles"].items()}
    current = data.get("current")
    if current is not None and current not in profiles:
        raise InvalidConfigError(f"profile {path}: current profile {current!r} is not in it")
    return Profiles(current, profiles)


def save_profiles(profiles: Profiles, path: Path | None = None) -> Path:
    """Write the profile file atomically; return its path."""
    path = path or profile_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    # Owner-only: a profile may hold a client token.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(profiles.to_json())
    tmp.replace(path)
    return path


def load_profile(path: Path | None = None) -> Profile:
    """Read the current profile.

    Raises:
        NotFoundError: no profile file, or none is current (start a cluster, switch to a
            profile, or give an endpoint).
        InvalidConfigError: the file is not a valid profile file.
    """
    path = path or profile_path()
    profiles = load_profiles(path)
    if not profiles.profiles:
        raise NotFoundError(
            f"no cluster profile at {path}: run `fluvio cluster start` or give an endpoint"
        )
    if profiles.current is None:
        raise NotFoundError(
            f"no current profile in {path}: `fluvio profile switch NAME` "
            f"({', '.join(sorted(profiles.profiles))})"
        )
    return profiles.profiles[profiles.current]


def save_profile(profile: Profile, path: Path | None = None) -> Path:
    """Add (or replace) ``profile`` under its name and make it current; return the path.

    Raises:
        InvalidConfigError: the existing file is not a valid profile file.
    """
    path = path or profile_path()
    parse_endpoints(profile.endpoint, what=f"profile {profile.name!r}: endpoint")
    old = load_profiles(path)
    return save_profiles(Profiles(profile.name, {**old.profiles, profile.name: profile}), path)


def switch_profile(name: str, path: Path | None = None) -> Profile:
    """Make ``name`` the current profile; return it.

    Raises:
        NotFoundError: no such profile (the message lists those there are).
    """
    path = path or profile_path()
    profiles = load_profiles(path)
    if name not in profiles.profiles:
        raise NotFoundError(_unknown(name, profiles, path))
    save_profiles(Profiles(name, profiles.profiles), path)
    return profiles.profiles[name]


def delete_profile(name: str, path: Path | None = None) -> bool:
    """Remove profile ``name``; return True when it was the current one (none is now).

    Raises:
        NotFoundError: no such profile.
    """
    path = path or profile_path()
    profiles = load_profiles(path)
    if name not in profiles.profiles:
        raise NotFoundError(_unknown(name, profiles, path))
    rest = {n: p for n, p in profiles.profiles.items() if n != name}
    was_current = profiles.current == name
    save_profiles(Profiles(None if was_current else profiles.current, rest), path)
    return was_current


def _unknown(name: str, profiles: Profiles, path: Path) -> str:
    known = ", ".join(sorted(profiles.profiles)) or "none"
    return f"no profile {name!r} in {path} (profiles: {known})"


def _joined(text: str, what: str) -> str:
    return ",".join(str(e) for e in parse_endpoints(text, what=what))


def resolve_endpoint(explicit: str | None = None, *, what: str = "endpoint") -> str:
    """The SC public address to use: ``explicit``, else ``FLUVIO_ENDPOINT``, else the profile.

    Every entry point calls this (``Fluvio.connect``/``FluvioAsync.connect``, the CLI's
    ``--endpoint``, Spark's ``endpoint`` option on the driver), so they agree. An empty
    ``explicit`` or ``FLUVIO_ENDPOINT`` counts as not given.

    Args:
        explicit: an endpoint the caller was given, or None.
        what: how errors name ``explicit`` (``"--endpoint"``, ``"option 'endpoint'"``).

    Returns:
        ``host:port`` as ``parse_endpoint`` reads it (IPv6 in brackets); several,
        comma separated, when the cluster runs standby SCs (``parse_endpoints``).

    Raises:
        InvalidConfigError: the endpoint used is malformed (naming ``what``,
            ``FLUVIO_ENDPOINT`` or the profile file), or the profile is unreadable.
        NotFoundError: none of the three is there.
    """
    if explicit:
        return _joined(explicit, what)
    env = os.environ.get(ENDPOINT_ENV, "").strip()
    if env:
        return _joined(env, f"environment variable {ENDPOINT_ENV}")
    path = profile_path()
    try:
        return load_profile(path).endpoint
    except NotFoundError:
        if load_profiles(path).profiles:  # profiles, but none current: say how to pick
            raise
        raise NotFoundError(
            f"no cluster endpoint: give one (Fluvio.connect('host:port'), --endpoint or "
            f"Spark's option('endpoint', ...)), set {ENDPOINT_ENV}=host:port, or run "
            f"`fluvio cluster start` to write the profile {path} (FLUVIO_PROFILE)"
        ) from None


def resolve_tls(endpoint: str, explicit: TlsConfig | None = None) -> TlsConfig | None:
    """How to connect to ``endpoint``: ``explicit``, else the current profile's TLS when
    the profile names that same endpoint, else None (plaintext).

    So a client of a ``--tls`` local cluster connects over TLS without being told,
    whether it found the endpoint in the profile or was given it.

    Raises:
        InvalidConfigError: the profile file is unreadable.
    """
    if explicit is not None:
        return explicit
    try:
        profile = load_profile()
    except NotFoundError:
        return None
    if profile.tls is None:
        return None
    named = parse_endpoints(profile.endpoint)
    if not any(e in named for e in parse_endpoints(endpoint)):
        return None
    return profile.tls


def resolve_token(explicit: str | None, endpoint: str) -> str | None:
    """The client token to present to the SC at ``endpoint`` (None: present none).

    ``explicit`` (the argument, ``--token``, the Spark ``token`` option), else
    ``FLUVIO_TOKEN``, else the current profile's token when the profile's endpoint is
    ``endpoint`` (a profile's token is never sent to another cluster). Empty counts as
    not given.

    Raises:
        InvalidConfigError: the profile file is unreadable.
    """
    if explicit:
        return explicit
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        return env
    profiles = load_profiles()
    current = profiles.profiles.get(profiles.current or "")
    if current is not None and current.token and current.endpoint == endpoint:
        return current.token
    return None
