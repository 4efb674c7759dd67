"""What a local cluster is (its recorded layout) and what ``status`` reports; pure data.

``ClusterLayout`` is ``cluster.json``: ports, Redis and SPU layout, written by the first
start and reused by every later one, which is why ``option_conflicts`` refuses options a
later start cannot honour. ``ClusterStatus`` is one look at the processes and SPUs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "FIRST_SPU_ID",
    "TLS_MODES",
    "ClusterLayout",
    "ProcessStatus",
    "ClusterStatus",
    "option_conflicts",
]

FIRST_SPU_ID = 5001
TLS_MODES = ("off", "tls", "mtls")


@dataclass
class ClusterLayout:
    """What a local cluster is made of; saved as ``cluster.json`` and reused on restart."""

    redis_port: int = 0
    redis_url: str = ""
    sc_public_port: int = 0
    sc_private_port: int = 0
    spu_mode: str = "group"
    spus: int = 1
    spu_ports: dict[str, list[int]] = field(default_factory=dict)
    metrics: bool = False
    """Every process serves Prometheus metrics on a free loopback port (``--metrics``)."""
    standby_ports: list[list[int]] = field(default_factory=list)
    """(public, private) ports of each standby SC (``--standby-scs``), fixed at first start."""
    tls: str = "off"
    """``off``, ``tls`` (every port speaks TLS) or ``mtls`` (and demands client
    certificates); certificates live in ``{data_dir}/tls`` (``--tls``, ``--mtls``)."""
    auth: bool = False
    """Clients need a token (``--auth``): the SC and SPUs check tokens signed with the key
    in ``{data_dir}/auth/cluster.key``; the profile gets an admin token."""

    @property
    def spu_ids(self) -> list[int]:
        """The SPU ids of the cluster: ``5001 .. 5000 + spus``."""
        return list(range(FIRST_SPU_ID, FIRST_SPU_ID + self.spus))


@dataclass(frozen=True, slots=True)
class ProcessStatus:
    """One process of the cluster."""

    name: str
    pid: int | None
    running: bool
    detail: str = ""
    metrics_url: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """What ``status`` reports: every process, and every SPU as the SC sees it.

    ``endpoint`` is None until an SC of this cluster has listened; ``started`` is False
    for a data directory no start ever used (nothing runs, no ``cluster.json``).
    """

    data_dir: str
    endpoint: str | None
    processes: list[ProcessStatus]
    spus: list[dict[str, Any]]
    started: bool = True

    @property
    def running(self) -> bool:
        """True when Redis and the SC (or a standby SC, which takes over) run."""
        names = {p.name: p.running for p in self.processes}
        scs = any(p.running for p in self.processes if p.name.split("-standby-")[0] == "sc")
        return scs and names.get("redis", True)

    @property
    def state(self) -> str:
        """``running``, ``stopped`` or ``not started``."""
        if not self.started:
            return "not started"
        return "running" if self.running else "stopped"

    def to_dict(self) -> dict[str, Any]:
        """A JSON/YAML-friendly view."""
        return {
            "data_dir": self.data_dir,
            "state": self.state,
            "endpoint": self.endpoint,
            "running": self.running,
            "processes": [asdict(p) for p in self.processes],
            "spus": self.spus,
        }


def option_conflicts(
    layout: ClusterLayout,
    *,
    spus: int | None = None,
    sc_port: int | None = None,
    redis_url: str | None = None,
    spu_mode: str | None = None,
    tls: str | None = None,
) -> list[str]:
    """The options of a later start that the existing cluster (``layout``) cannot honour.

    None means "not given". A cluster keeps its ports, SPU mode and Redis across starts
    and a start never removes SPUs, so asking otherwise is an error, not ignored.

    Returns:
        One sentence per conflicting option (empty when all agree).
    """
    problems = []
    if spus is not None and spus < layout.spus:
        problems.append(
            f"--spus {spus}: the cluster has {layout.spus} SPUs and a start never removes any"
        )
    if sc_port and layout.sc_public_port and sc_port != layout.sc_public_port:
        problems.append(f"--sc-port {sc_port}: the cluster's SC keeps port {layout.sc_public_port}")
    if spu_mode is not None and spu_mode != layout.spu_mode:
        problems.append(f"--spu-mode {spu_mode}: the cluster's SPUs are {layout.spu_mode} SPUs")
    if tls is not None and tls != layout.tls:
        problems.append(
            f"TLS {tls}: the cluster was made with TLS {layout.tls} (its clients' profile "
            "and certificates follow it); delete it to change"
        )
    if redis_url and layout.redis_url and redis_url != layout.redis_url:
        where = f"its own Redis ({layout.redis_url})" if layout.redis_port else layout.redis_url
        problems.append(f"--redis-url {redis_url}: the cluster keeps its state in {where}")
    return problems
