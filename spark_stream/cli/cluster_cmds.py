"""``fluvio cluster start|stop|status``: the local cluster (``spark_stream.local.cluster``)."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from spark_stream.cli.output import emit
from spark_stream.client.profile import load_profile
from spark_stream.errors import FluvioError
from spark_stream.local.cluster import DEFAULT_DATA_DIR, ClusterStatus, LocalCluster

__all__ = ["cluster_start", "cluster_stop", "cluster_status", "data_dir"]


def data_dir(args: argparse.Namespace) -> Path:
    """``--data-dir``, else the profile's cluster, else ``~/.fluvio``."""
    if args.data_dir:
        return Path(args.data_dir)
    with contextlib.suppress(FluvioError):
        profile = load_profile()
        if profile.data_dir:
            return Path(profile.data_dir)
    return DEFAULT_DATA_DIR


def _print_status(status: ClusterStatus, fmt: str) -> None:
    if fmt != "table":
        emit(status.to_dict(), fmt)
        return
    if not status.started:
        print(f"cluster not started: no cluster in {status.data_dir}")
        return
    where = f"SC at {status.endpoint}, " if status.endpoint else ""
    print(f"cluster {status.state}: {where}data in {status.data_dir}")
    rows = [
        {
            "process": p.name,
            "pid": p.pid,
            "state": "running" if p.running else "stopped",
            "detail": p.detail,
            "metrics": p.metrics_url or "",
        }
        for p in status.processes
    ]
    columns: tuple[str, ...] = ("process", "pid", "state", "detail")
    if any(p.metrics_url for p in status.processes):
        columns += ("metrics",)
    emit(rows, "table", columns=columns)
    if status.spus:
        print()
        emit(status.spus, "table", columns=("id", "name", "type", "public", "status"))


def cluster_start(args: argparse.Namespace) -> int:
    """Start (or complete) the local cluster and write the client profile."""
    cluster = LocalCluster(
        data_dir(args),
        spus=args.spus,
        sc_port=args.sc_port,
        redis_url=args.redis_url,
        spu_mode=args.spu_mode,
        start_timeout=args.timeout,
        metrics=args.metrics,
    )
    status = cluster.start()
    _print_status(status, args.output)
    return 0


def cluster_stop(args: argparse.Namespace) -> int:
    """Stop every process of the local cluster; keep its data."""
    cluster = LocalCluster(data_dir(args))
    stopped = cluster.stop()
    print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def cluster_status(args: argparse.Namespace) -> int:
    """Show every process and SPU; exit 1 when the cluster is not running (or never ran)."""
    status = LocalCluster(data_dir(args)).status()
    _print_status(status, args.output)
    return 0 if status.running else 1
