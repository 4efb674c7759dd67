"""The client profile: where the local cluster's SC is, written by ``fluvio cluster start``.

One JSON file (``FLUVIO_PROFILE``, default ``~/.fluvio/profile.json``) holding the SC's
public endpoint and the cluster's data directory, so ``Fluvio.connect()`` with no
argument, the CLI and Spark find the cluster without being told.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from spark_stream.errors import InvalidConfigError, NotFoundError
from spark_stream.net.endpoint import parse_endpoint

__all__ = ["Profile", "profile_path", "load_profile", "save_profile"]


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
