"""Z1 in integration tests: the SPUs' record of gate changes shows that no two grants of
one partition were ever admitted at overlapping times.

A cluster started with ``AUDIT_ENV`` has every SPU append each gate change to ``AUDIT``
in its data dir (``FLUVIO_SPU_GATE_AUDIT_FILE``); ``assert_no_overlapping_grants`` reads
them back. Every integration test that runs group members on real SPUs ends with it.
"""

from __future__ import annotations

from spark_stream.local.cluster import LocalCluster
from spu.gate_audit import overlapping_grants, read_audit_file

__all__ = ["AUDIT", "AUDIT_ENV", "assert_no_overlapping_grants"]

AUDIT = "gate-audit.jsonl"
AUDIT_ENV = {"FLUVIO_SPU_GATE_AUDIT_FILE": AUDIT}


def assert_no_overlapping_grants(
    cluster: LocalCluster, ended_ns: dict[int, int] | None = None
) -> int:
    """Z1: no two grants of one partition were ever admitted at overlapping times.

    Args:
        ended_ns: SPUs that were killed, with the ``time.monotonic_ns()`` of the kill.

    Returns:
        How many gate changes the SPUs recorded (a test asserts it saw some).
    """
    ended = ended_ns or {}
    logs = [
        read_audit_file(cluster.spu_dir(i) / AUDIT, i, ended.get(i))
        for i in cluster.layout.spu_ids
        if (cluster.spu_dir(i) / AUDIT).exists()
    ]
    assert overlapping_grants(logs) == []
    return sum(len(log.changes) for log in logs)
