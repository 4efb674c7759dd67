"""Where the SC is: the client profile written by ``fluvio cluster start``, and the one
resolution order every entry point uses.

The profile is one JSON file (``FLUVIO_PROFILE``, default ``~/.fluvio/profile.json``)
holding the SC's public endpoint and the cluster's data directory, so
``Fluvio.connect()`` with no argument, the CLI and Spark find the cluster without being
told. ``resolve_endpoint`` is the order, implemented once: an explicit endpoint (the
argument, ``--endpoint``, the Spark ``endpoint`` option), else ``FLUVIO_ENDPOINT``, else
the profile, else a ``NotFoundError`` naming all three.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from spark_stream.errors import InvalidConfigError, NotFoundError
from spark_stream.net.endpoint import parse_endpoint

__all__ = [
    "ENDPOINT_ENV",
    "Profile",
    "profile_path",
    "load_profile",
    "save_profile",
    "resolve_endpoint",
]

ENDPOINT_ENV = "FLUVIO_ENDPOINT"
"""The environment variable naming the SC's public ``host:port``; empty counts as unset."""


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
    """

    endpoint: str
    data_dir: str = ""
    name: str = "local"


def load_profile(path: Path | None = None) -> Profile:
    """Read the profile.

    Raises:
        NotFoundError: no profile file (start a cluster, or give an endpoint).
        InvalidConfigError: the file is not a valid profile.
    """
    path = path or profile_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise NotFoundError(
            f"no cluster profile at {path}: run `fluvio cluster start` or give an endpoint"
        ) from None
    except (OSError, ValueError) as exc:
        raise InvalidConfigError(f"profile {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("endpoint"), str):
        raise InvalidConfigError(f"profile {path} has no 'endpoint'")
    parse_endpoint(data["endpoint"], what=f"profile {path}: 'endpoint'")
    return Profile(
        endpoint=data["endpoint"],
        data_dir=str(data.get("data_dir", "")),
        name=str(data.get("name", "local")),
    )


def save_profile(profile: Profile, path: Path | None = None) -> Path:
    """Write the profile atomically; return its path."""
    path = path or profile_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(profile), indent=2) + "\n")
    tmp.replace(path)
    return path


def resolve_endpoint(explicit: str | None = None, *, what: str = "endpoint") -> str:
    """The SC public address to use: ``explicit``, else ``FLUVIO_ENDPOINT``, else the profile.

    Every entry point calls this (``Fluvio.connect``/``FluvioAsync.connect``, the CLI's
    ``--endpoint``, Spark's ``endpoint`` option on the driver), so they agree. An empty
    ``explicit`` or ``FLUVIO_ENDPOINT`` counts as not given.

    Args:
        explicit: an endpoint the caller was given, or None.
        what: how errors name ``explicit`` (``"--endpoint"``, ``"option 'endpoint'"``).

    Returns:
        ``host:port`` as ``parse_endpoint`` reads it (IPv6 in brackets).

    Raises:
        InvalidConfigError: the endpoint used is malformed (naming ``what``,
            ``FLUVIO_ENDPOINT`` or the profile file), or the profile is unreadable.
        NotFoundError: none of the three is there.
    """
    if explicit:
        return str(parse_endpoint(explicit, what=what))
    env = os.environ.get(ENDPOINT_ENV, "").strip()
    if env:
        return str(parse_endpoint(env, what=f"environment variable {ENDPOINT_ENV}"))
    path = profile_path()
    try:
        return load_profile(path).endpoint
    except NotFoundError:
        raise NotFoundError(
            f"no cluster endpoint: give one (Fluvio.connect('host:port'), --endpoint or "
            f"Spark's option('endpoint', ...)), set {ENDPOINT_ENV}=host:port, or run "
            f"`fluvio cluster start` to write the profile {path} (FLUVIO_PROFILE)"
        ) from None
