"""Test moves on a ``LocalCluster``: crash an SPU by pid, bring the cluster back whole.

A product ``LocalCluster`` starts, stops and reports; killing one of its processes is
what tests do, so it lives here. Restarting is the product's own idempotent ``start()``,
which starts whatever is missing.
"""

from __future__ import annotations

import signal

from spark_stream.local.cluster import LocalCluster
from spark_stream.supervision import running, terminate

__all__ = ["kill_spu"]


def kill_spu(cluster: LocalCluster, spu_id: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to SPU ``spu_id`` and wait (bounded) until it is gone.

    An SPU that outlives ``cluster.stop_timeout`` after ``sig`` gets SIGKILL.

    Returns:
        False when the SPU was not running.
    """
    record = running(cluster.spu_pid_file(spu_id))
    if record is None:
        return False
    terminate(record, cluster.stop_timeout, name=f"spu-{spu_id}", sig=sig)
    return True
