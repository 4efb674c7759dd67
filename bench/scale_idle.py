"""An idle SPU's file descriptors and CPU at P partitions, alone (``bench.scale``'s SPU
curve without the produce and catch-up parts), with an optional py-spy profile.

    .venv/bin/python -m bench.scale_idle [--partitions 1000] [--idle-s 20] [--profile OUT]

A cluster of 3 SPU processes (in a temporary directory, stopped by pid) gets one topic of
P partitions with replication 3; after ``--settle-s`` seconds (the creation's one-time
work, as in ``bench.scale``) the first SPU's open fds are counted and its CPU measured over
``--idle-s`` seconds with no traffic. With ``--profile OUT`` py-spy records that SPU over
the idle interval too (raw collapsed stacks, idle frames included). The last line printed
is one JSON object: ``fds_before``, ``fds``, ``idle_cpu_pct``, the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._scale_math import cpu_percent
from bench._scale_procs import admin_for, cpu_s, fd_count, spu_ids, start_cluster, wait_online

TOPIC = "scale-idle"
PY_SPY = Path(sys.executable).with_name("py-spy")


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_idle", description=__doc__)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--settle-s", type=float, default=30.0)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--profile", type=Path, default=None, help="py-spy raw output file")
    parser.add_argument("--rate", type=int, default=50, help="py-spy samples per second")
    return parser.parse_args()


def main() -> None:
    """Measure once and print the JSON line."""
    args = _args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-idle-") as tmp:
        cluster = start_cluster(Path(tmp) / "cluster", 3)
        try:
            pid = cluster.spu_pid(spu_ids(3)[0])
            assert pid is not None, "SPU not running"
            time.sleep(3.0)
            out: dict[str, object] = {"partitions": args.partitions, "fds_before": fd_count(pid)}

            async def create() -> float:
                async with admin_for(cluster) as admin:
                    await admin.create_topic(
                        TOPIC, partitions=args.partitions, replication_factor=3
                    )
                    return await wait_online(admin, TOPIC, args.partitions, 900.0)

            out["create_s"] = round(asyncio.run(create()), 3)
            time.sleep(args.settle_s)
            out["fds"] = fd_count(pid)
            spy = None
            if args.profile is not None:
                duration = str(int(args.idle_s))
                spy = subprocess.Popen(
                    [str(PY_SPY), "record", "--idle", "-r", str(args.rate), "-d", duration]
                    + ["-p", str(pid), "-f", "raw", "-o", str(args.profile)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            cpu0, wall0 = cpu_s(pid), time.perf_counter()
            time.sleep(args.idle_s)
            idle = cpu_percent(cpu0, cpu_s(pid), time.perf_counter() - wall0)
            out["idle_cpu_pct"] = round(idle, 2)
            out["fds_after_idle"] = fd_count(pid)
            if spy is not None:
                spy.wait(timeout=60)
            out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
        finally:
            cluster.stop()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
