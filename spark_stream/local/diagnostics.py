"""``fluvio cluster diagnostics``: a local cluster's logs, config and state in one archive.

What goes in (``diagnostics-<UTC time>/`` inside ``.tar.gz``):

* ``logs/``: every process log (Redis, SC, custom SPUs) and the managed SPUs' logs
  (``spus/spu-<id>/spu.log``); never record data, SPU secrets or the Redis password.
* ``config/``: ``cluster.json`` (ports, Redis, SPU layout) and the client profiles.
* ``state/``: ``status.json`` (processes as ``cluster status -O json``) and, from the SC,
  ``topics.json``, ``partitions.json``, ``spus.json``, ``spu-groups.json``,
  ``consumer-groups.json``; ``redis-info.json`` (Redis ``INFO``).
* ``errors.txt``: what could not be collected and why (an SC or Redis that does not
  answer is what one collects diagnostics for, so a part that fails is noted, not fatal).
"""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from spark_stream.client.admin import AdminClient
from spark_stream.client.profile import profile_path
from spark_stream.errors import FluvioError, NotFoundError
from spark_stream.local.cluster import LocalCluster
from spark_stream.net.tls import TlsConfig

__all__ = ["collect_diagnostics"]

_HOST = "127.0.0.1"


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, default=str) + "\n").encode()


class _Archive:
    """A tar.gz being written: files added by name under one top folder."""

    def __init__(self, tar: tarfile.TarFile, top: str) -> None:
        self.tar = tar
        self.top = top
        self.errors: list[str] = []

    def add_bytes(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(f"{self.top}/{name}")
        info.size = len(data)
        info.mtime = int(time.time())
        self.tar.addfile(info, io.BytesIO(data))

    def add_file(self, name: str, path: Path) -> None:
        try:
            self.add_bytes(name, path.read_bytes())
        except OSError as exc:
            self.errors.append(f"{name}: cannot read {path}: {exc}")

    def add_errors(self) -> None:
        if self.errors:
            self.add_bytes("errors.txt", ("\n".join(self.errors) + "\n").encode())


def _redacted_profiles(path: Path) -> bytes:
    """The profile file with every client token replaced: an archive is shared."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return f"unreadable: {exc}\n".encode()
    if isinstance(doc, dict):
        for profile in [doc, *(doc.get("profiles") or {}).values()]:
            if isinstance(profile, dict) and "token" in profile:
                profile["token"] = "<redacted>"
    return (json.dumps(doc, indent=2) + "\n").encode()


async def _sc_state(
    port: int,
    request_timeout_s: float,
    tls: TlsConfig | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """Every listing the SC answers, by file name; a failed one is an ``{"error"}``."""
    state: dict[str, Any] = {}
    async with AdminClient(_HOST, port, timeout=request_timeout_s, tls=tls, token=token) as admin:
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "topics": admin.list_topics,
            "partitions": admin.list_partitions,
            "spus": admin.list_spus,
            "spu-groups": admin.list_spu_groups,
            "consumer-groups": admin.list_groups,
        }
        for name, call in calls.items():
            try:
                found = await call()
            except FluvioError as exc:
                state[name] = {"error": str(exc)}
                continue
            state[name] = [o.to_dict() if hasattr(o, "to_dict") else o for o in found]
    return state


def _redis_info(url: str, timeout: float, password: str | None) -> dict[str, Any]:
    client = redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, password=password
    )
    try:
        return dict(client.info("all"))
    finally:
        client.close()


def collect_diagnostics(
    cluster: LocalCluster, dest: Path, *, timeout: float = 5.0, now: datetime | None = None
) -> Path:
    """Write the archive of ``cluster`` into directory ``dest``; return its path.

    Args:
        cluster: the local cluster (running or not).
        dest: the directory the ``.tar.gz`` goes to (created if missing).
        timeout: bound on each question to the SC and to Redis.
        now: the time in the file name (default: now).

    Raises:
        NotFoundError: no cluster was ever started in ``cluster.data_dir``.
    """
    status = cluster.status()
    if not status.started:
        raise NotFoundError(f"no cluster in {cluster.data_dir}: nothing to diagnose")
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    top = f"diagnostics-{stamp}"
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        archive = _Archive(tar, top)
        data = cluster.data_dir
        for log in sorted((data / "logs").glob("*.log")):
            archive.add_file(f"logs/{log.name}", log)
        for log in sorted((data / "spus").glob("spu-*/spu.log")):
            archive.add_file(f"logs/{log.parent.name}.log", log)
        archive.add_file("config/cluster.json", data / "cluster.json")
        profiles = cluster.profile or profile_path()
        if profiles.is_file():
            archive.add_bytes("config/profile.json", _redacted_profiles(profiles))
        archive.add_bytes("state/status.json", _json(status.to_dict()))
        if status.running and cluster.layout.sc_public_port:
            try:
                found = asyncio.run(
                    _sc_state(
                        cluster.layout.sc_public_port,
                        timeout,
                        cluster.client_tls,
                        cluster.admin_token,
                    )
                )
            except (FluvioError, OSError) as exc:
                archive.errors.append(f"SC at {status.endpoint}: {exc}")
            else:
                for name, listing in found.items():
                    archive.add_bytes(f"state/{name}.json", _json(listing))
        else:
            archive.errors.append(f"SC: not running (cluster {status.state}); no SC state")
        if cluster.layout.redis_url:
            try:
                info = _redis_info(cluster.layout.redis_url, timeout, cluster.redis_password())
            except (redis.RedisError, OSError, FluvioError) as exc:
                archive.errors.append(f"Redis at {cluster.layout.redis_url}: {exc}")
            else:
                archive.add_bytes("state/redis-info.json", _json(info))
        archive.add_errors()
    return path
