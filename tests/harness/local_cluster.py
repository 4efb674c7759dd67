"""Test moves on a ``LocalCluster``: crash an SPU by pid, bring the cluster back whole.

A product ``LocalCluster`` starts, stops and reports; killing one of its processes is
what tests do, so it lives here. Restarting is the product's own idempotent ``start()``,
which starts whatever is missing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from spark_stream.local.cluster import LocalCluster

__all__ = ["kill_spu"]


def kill_spu(cluster: LocalCluster, spu_id: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to SPU ``spu_id`` and wait (bounded) until it is gone.

    Returns:
        False when the SPU was not running.
    """
    pid = cluster.spu_pid(spu_id)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    deadline = time.monotonic() + cluster.stop_timeout
    while time.monotonic() < deadline and cluster.spu_pid(spu_id) is not None:
        time.sleep(0.01)  # waiting for the exit of a killed process
    return True
