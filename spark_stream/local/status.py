"""One look at a local cluster: its processes as they run now and its SPUs as the SC
sees them.

Why apart from ``cluster``: ``status`` only reads (pid files, the files processes wrote,
one ``list_spus`` to the SC when one runs) and never starts or stops anything; it needs
nothing of ``LocalCluster`` beyond its files (``ClusterFiles``), so the CLI's status and
the diagnostics read the same view without the start machinery.
"""

from __future__ import annotations

import asyncio
from typing import Any

from spark_stream.client.admin import AdminClient
from spark_stream.errors import FluvioError
from spark_stream.local._state import ClusterStatus, ProcessStatus
from spark_stream.local.cluster_files import HOST, ClusterFiles
from spark_stream.local.launcher import process_alive
from spark_stream.models import Spu
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import ScEndpoints

__all__ = ["read_status"]


def read_status(files: ClusterFiles) -> ClusterStatus:
    """Every process of the cluster as it is now and, when the SC answers, every SPU.

    SPU processes listed are those of the cluster's current state: the SC's SPUs
    when it answers (else the recorded layout's), plus any still running here; a
    deleted group's SPUs are gone. A data dir never started reports ``not started``.
    """
    redis_pid = process_alive(files.pid_file("redis"))
    sc_pid = process_alive(files.pid_file("sc"))
    known = files.known_spu_ids()
    spu_pids = {i: pid for i in known if (pid := files.spu_pid(i)) is not None}
    endpoint = files.endpoint if files.layout.sc_public_port else None
    if not (files.layout_file.is_file() or redis_pid or sc_pid or spu_pids):
        return ClusterStatus(str(files.data_dir), None, [], [], started=False)
    spus: list[dict[str, Any]] | None = None
    standbys = {name: process_alive(files.pid_file(name)) for name in files.standby_names}
    any_sc = sc_pid is not None or any(pid is not None for pid in standbys.values())
    if any_sc and endpoint is not None:
        try:
            spus = asyncio.run(_list_spus(files))
        except (FluvioError, OSError):
            spus = None  # not answering: fall back to the recorded layout
    if spus is not None:
        ids = {s["id"] for s in spus} & set(known)
    else:
        ids = set(files.layout.spu_ids) | {int(k) for k in files.layout.spu_ports}
    procs = []
    if files.layout.redis_port or redis_pid is not None:
        procs.append(
            ProcessStatus("redis", redis_pid, redis_pid is not None, files.layout.redis_url)
        )
    sc_metrics = files.metrics_url("sc") if sc_pid is not None else None
    procs.append(ProcessStatus("sc", sc_pid, sc_pid is not None, endpoint or "", sc_metrics))
    for name, (public, _) in zip(files.standby_names, files.layout.standby_ports, strict=True):
        pid = standbys[name]
        procs.append(ProcessStatus(name, pid, pid is not None, f"{HOST}:{public}"))
    for spu_id in sorted(ids | set(spu_pids)):
        pid = spu_pids.get(spu_id)
        name = f"spu-{spu_id}"
        url = files.metrics_url(name) if pid is not None else None
        procs.append(ProcessStatus(name, pid, pid is not None, metrics_url=url))
    return ClusterStatus(str(files.data_dir), endpoint, procs, spus or [])


async def _list_spus(files: ClusterFiles) -> list[dict[str, Any]]:
    """Every SPU as the (active) SC lists it, one row each."""
    scs = ScEndpoints.parse(files.endpoint)
    async with AdminClient(
        endpoints=scs, timeout=5.0, tls=files.client_tls, token=files.admin_token
    ) as admin:
        return [_spu_row(s) for s in await admin.list_spus()]


def _spu_row(spu: Spu) -> dict[str, Any]:
    """One SPU as ``status`` lists it."""
    public = spu.spec.public_endpoint
    return {
        "id": spu.spu_id,
        "name": spu.name,
        "type": spu.spec.spu_type.value,
        "public": str(Endpoint(public.host, public.port)),
        "status": spu.status.resolution.value,
    }
