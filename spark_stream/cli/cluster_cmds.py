"""``fluvio cluster start|stop|status|delete|diagnostics``: the local cluster
(``spark_stream.local.cluster``; the archive is ``spark_stream.local.diagnostics``'s)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from spark_stream.cli.output import emit
from spark_stream.client.profile import load_profile
from spark_stream.errors import FluvioError, InvalidConfigError
from spark_stream.local.cluster import DEFAULT_DATA_DIR, ClusterStatus, LocalCluster
from spark_stream.local.diagnostics import collect_diagnostics

__all__ = [
    "cluster_start",
    "cluster_stop",
    "cluster_status",
    "cluster_delete",
    "cluster_diagnostics",
    "data_dir",
]


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
        redis_fsync=args.redis_fsync,
        spu_mode=args.spu_mode,
        start_timeout=args.timeout,
        metrics=args.metrics,
        standby_scs=args.standby_scs,
        tls="mtls" if args.mtls else "tls" if args.tls else None,
        auth=args.auth,
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


def cluster_delete(args: argparse.Namespace) -> int:
    """Stop the local cluster and remove its data, after a yes on the terminal (or -y).

    Raises:
        InvalidConfigError: not forced and stdin is not a terminal (nobody to ask).
    """
    cluster = LocalCluster(data_dir(args))
    if not args.force:
        if not sys.stdin.isatty():
            raise InvalidConfigError(
                "cluster delete: stdin is not a terminal, so nobody can confirm; "
                "add --force (-y) to delete without asking"
            )
        answer = input(
            f"Delete the local cluster in {cluster.data_dir}: stop it and remove all its "
            "topics and data? This cannot be undone. [y/N] "
        )
        if answer.strip().lower() not in ("y", "yes"):
            print("not deleted")
            return 1
    stopped, removed = cluster.delete()
    if stopped:
        print(f"stopped: {', '.join(stopped)}")
    print(f"deleted the cluster in {cluster.data_dir} ({len(removed)} paths removed)")
    if cluster.layout.redis_url and not cluster.layout.redis_port:
        print(f"note: the external Redis {cluster.layout.redis_url} keeps its keys")
    return 0


def cluster_diagnostics(args: argparse.Namespace) -> int:
    """Collect the local cluster's logs, config and state into a .tar.gz; print its path."""
    cluster = LocalCluster(data_dir(args))
    path = collect_diagnostics(cluster, Path(args.dest or "."), timeout=args.timeout)
    print(path.resolve())
    return 0
