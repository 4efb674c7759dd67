"""Scale benchmark: how the cluster's costs grow with partitions, clients and log size.

    .venv/bin/python -m bench.scale [--quick] [--full]

Four curves, each on real local clusters (Redis, SC and SPU processes in temporary
directories, stopped by pid when done); the sizes by default / ``--quick`` / ``--full``:

- SC (``bench._scale_sc``) with N partitions, N in 100, 1000 / 10, 100 / + 10000: time to
  create them all online, SC RSS and Redis ``used_memory``, metadata-watch latency to K
  watchers (100 / 10 / 100), leader election for every partition of a SIGKILLed SPU;
- SPU (``bench._scale_spu``) with P partitions (replication 3 on 3 SPUs), P in 10, 100 /
  2, 10 / + 1000: RSS per partition, idle CPU, open fds, produce throughput spread over
  all partitions, follower catch-up after a restart;
- C client connections on one SPU, C in 10, 100, 1000 / 10, 100 / same: RSS per
  connection, p99 of a small produce (in turn, and all at once), connections refused;
- SPU recovery (``bench._scale_recovery``) with logs of 1, 10, 100 GB scaled by segment
  count (G sealed segments) / 1, 10 / + 1000: time from the SPU's start to serving a fetch.

Each curve also gets a ``*_growth`` figure: the cost per unit at the largest size over the
smallest (``bench._scale_math.growth``; <= about 1: at most linear). ``goals`` holds the
issue's goals as booleans, None where the size was not measured. Progress goes to
stderr; the last line printed is one JSON object with every figure (the user guide's
"Scale curves" lists the keys).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import dataclass
from typing import Any

from bench._scale_math import flat, goal, growth
from bench._scale_procs import progress

__all__ = ["Sizes", "SIZES", "main", "summarize"]


@dataclass(frozen=True, slots=True)
class Sizes:
    """The sizes of one run."""

    sc: tuple[int, ...]
    watchers: int
    spu: tuple[int, ...]
    records: int
    idle_s: float
    settle_s: float
    conns: tuple[int, ...]
    recovery: tuple[int, ...]


SIZES = {
    "quick": Sizes((10, 100), 10, (2, 10), 20_000, 2.0, 5.0, (10, 100), (1, 10)),
    "default": Sizes(
        (100, 1000), 100, (10, 100), 200_000, 10.0, 30.0, (10, 100, 1000), (1, 10, 100)
    ),
    "full": Sizes(
        sc=(100, 1000, 10000),
        watchers=100,
        spu=(10, 100, 1000),
        records=200_000,
        idle_s=10.0,
        settle_s=30.0,
        conns=(10, 100, 1000),
        recovery=(1, 10, 100, 1000),
    ),
}


def raise_fd_limit() -> int:
    """Raise this process's soft open-file limit to the hard one (the clusters it starts
    inherit it); returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _pick(results: dict[int, dict[str, Any]], key: str) -> dict[int, float | None]:
    return {size: r.get(key) for size, r in results.items()}


def _inverse(values: dict[int, float | None]) -> dict[int, float | None]:
    return {k: (1.0 / v if v else None) for k, v in values.items()}


def summarize(
    sc: dict[int, dict[str, Any]],
    spu: dict[int, dict[str, Any]],
    conns: dict[int, dict[str, Any]],
    recovery: dict[int, dict[str, Any]],
) -> dict[str, Any]:
    """Every figure as flat keys, the growth figures and the goals (pure)."""
    out: dict[str, Any] = {}
    for n, r in sorted(sc.items()):
        out.update({f"sc_{n}p_{k}": v for k, v in r.items()})
    for p, r in sorted(spu.items()):
        out.update({f"spu_{p}p_{k}": v for k, v in r.items()})
    for c, r in sorted(conns.items()):
        out.update({f"conn_{c}_{k}": v for k, v in r.items()})
    for g, r in sorted(recovery.items()):
        out.update({f"recovery_{g}gb_{k}": v for k, v in r.items()})
    moved = {r["election_partitions"]: r["election_s"] for r in sc.values()}
    fds = {p: r["fds"] - r["fds_before"] for p, r in spu.items()}
    out.update(
        sc_create_growth=growth(_pick(sc, "create_s")),
        sc_election_growth=growth(moved),
        sc_rss_growth=growth(_pick(sc, "sc_rss_per_partition_kb"), per=False),
        redis_used_growth=growth(_pick(sc, "redis_per_partition_kb"), per=False),
        sc_watch_p99_growth=growth(_pick(sc, "watch_p99_ms"), per=False),
        spu_rss_growth=growth(_pick(spu, "rss_per_partition_mb"), per=False),
        spu_idle_cpu_growth=growth(_pick(spu, "idle_cpu_pct")),
        spu_fds_growth=growth({p: float(v) for p, v in fds.items()}),
        spu_produce_growth=growth(_inverse(_pick(spu, "produce_rps")), per=False),
        spu_catch_up_growth=growth(_pick(spu, "catch_up_s")),
        conn_rss_growth=growth(_pick(conns, "rss_per_conn_kb"), per=False),
        conn_seq_p99_growth=growth(_pick(conns, "seq_p99_ms"), per=False),
        conn_burst_p99_growth=growth(_pick(conns, "burst_p99_ms")),
        conn_refused_total=sum(r["refused"] for r in conns.values()),
        recovery_growth=growth(_pick(recovery, "recovery_s"), per=False),
    )
    at_1000 = spu.get(1000, {})
    sc_1000 = sc.get(1000, {})
    election = sc_1000.get("election_s")
    if sc_1000.get("election_offline"):
        election = float("inf")  # partitions left without a leader: not completed
    out["goals"] = {
        "spu_1000p_idle_cpu_pct": goal(at_1000.get("idle_cpu_pct"), 2.0),
        "spu_1000p_rss_mb": goal(at_1000.get("rss_mb"), 500.0),
        "election_1000p_s": goal(election, 2.0, strict=False),
        "recovery_flat": flat(_pick(recovery, "recovery_s")),
        "no_connection_refused": out["conn_refused_total"] == 0 if conns else None,
    }
    return out


def run(sizes: Sizes) -> dict[str, Any]:
    """Every curve at ``sizes``; the figures (``summarize``)."""
    from bench._scale_recovery import measure_recovery
    from bench._scale_sc import measure_sc
    from bench._scale_spu import measure_connections, measure_partitions

    started = time.perf_counter()
    fd_limit = raise_fd_limit()
    sc: dict[int, dict[str, Any]] = {}
    for n in sizes.sc:
        progress(f"SC with {n} partitions (replication 2 on 3 SPUs)")
        sc[n] = measure_sc(n, sizes.watchers)
        progress(f"  {sc[n]}")
    spu: dict[int, dict[str, Any]] = {}
    for p in sizes.spu:
        progress(f"SPU with {p} partitions (replication 3 on 3 SPUs)")
        spu[p] = measure_partitions(p, sizes.records, sizes.idle_s, sizes.settle_s)
        progress(f"  {spu[p]}")
    progress(f"client connections on one SPU (fd limit {fd_limit})")
    conns = measure_connections(list(sizes.conns))
    progress("SPU recovery with sealed segments")
    recovery = measure_recovery(list(sizes.recovery))
    out: dict[str, Any] = {"bench": "scale", "watchers": sizes.watchers, "fd_limit": fd_limit}
    out.update(summarize(sc, spu, conns, recovery))
    out["elapsed_s"] = round(time.perf_counter() - started, 1)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; the last line printed is the JSON of the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--quick", action="store_true", help="small sizes (under 2 minutes)")
    which.add_argument("--full", action="store_true", help="the issue's full sizes")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full" if args.full else "default"
    result = {"mode": mode, **run(SIZES[mode])}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
