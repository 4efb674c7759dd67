"""A local cluster started with mutual TLS, for the TLS tests of the client, the CLI and
Spark: two custom SPUs (so replication runs over TLS too), its own profile and data dir."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from spark_stream.local.cluster import LocalCluster

__all__ = ["tls_cluster"]


@contextlib.contextmanager
def tls_cluster(
    root: Path, *, mode: str = "mtls", spus: int = 2, auth: bool = False
) -> Iterator[LocalCluster]:
    """Start a ``--tls``/``--mtls`` cluster under ``root`` with ``FLUVIO_PROFILE`` set to
    its profile for the duration; stop it after. ``auth``: clients need a token too
    (``--auth``; the profile holds an admin one)."""
    saved = os.environ.get("FLUVIO_PROFILE")
    os.environ["FLUVIO_PROFILE"] = str(root / "profile.json")
    cluster = LocalCluster(
        root / "cluster", spus=spus, sc_port=0, spu_mode="custom", start_timeout=60.0,
        default_tier=False, tls=mode, auth=auth,
    )  # fmt: skip
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        if saved is None:
            os.environ.pop("FLUVIO_PROFILE", None)
        else:
            os.environ["FLUVIO_PROFILE"] = saved
