"""Shared parts of the consumer-group failure suite (``test_group_faults*.py``).

- ``group_cluster``: a real local cluster (Redis, SC, custom SPUs) whose SC gives new
  groups short timeouts (session 3 s, heartbeat 0.5 s, rebalance 2 s) and whose SPUs
  write every gate change to ``AUDIT`` in their data dir (``FLUVIO_SPU_GATE_AUDIT_FILE``).
- ``assert_no_overlapping_grants``: Z1 from those files, the check every test ends with.
- ``Producer``: a background thread producing small batches into every partition until
  stopped, so members read while records arrive.
- ``read_everything``, ``gaps``, ``duplicates``: once produce stopped, wait until the
  members handed out every offset of the log (no gap), then count what came twice.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from spu.gate_audit import overlapping_grants, read_audit_file
from tests.integration.group_member_proc import MemberProc, Output
from tests.integration.helpers import running_cluster
from tests.polling import wait_until

__all__ = [
    "AUDIT",
    "REBALANCE_S",
    "SESSION_S",
    "Producer",
    "assert_no_overlapping_grants",
    "duplicates",
    "gaps",
    "group_cluster",
    "read_everything",
]

AUDIT = "gate-audit.jsonl"
SESSION_S = 3.0
REBALANCE_S = 2.0
_ENV = {
    "FLUVIO_SPU_GATE_AUDIT_FILE": AUDIT,
    "FLUVIO_SC_GROUP_SESSION_TIMEOUT_MS": str(int(SESSION_S * 1000)),
    "FLUVIO_SC_GROUP_HEARTBEAT_INTERVAL_MS": "500",
    "FLUVIO_SC_GROUP_REBALANCE_TIMEOUT_MS": str(int(REBALANCE_S * 1000)),
}


@contextlib.contextmanager
def group_cluster(data_dir: Path, spus: int = 3) -> Iterator[LocalCluster]:
    """A started cluster for group faults (see the module doc); stopped on exit."""
    with running_cluster(data_dir, spus=spus, env=_ENV) as cluster:
        yield cluster


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


class Producer:
    """Produces ``per_tick`` records into each partition every ``every`` s until stopped."""

    def __init__(
        self, fluvio: Fluvio, topic: str, partitions: int, per_tick: int = 3, every: float = 0.02
    ) -> None:
        # Retries ride out a leader change (the leader-kill test).
        self._producer = fluvio.topic_producer(
            topic, acks="all", retry_backoff_ms=50, delivery_timeout_ms=60_000
        )
        self._partitions = partitions
        self._per_tick = per_tick
        self._every = every
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self.sent = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Producer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._every):
                for p in range(self._partitions):
                    values = [f"{p}-{self.sent + i}" for i in range(self._per_tick)]
                    self._producer.send_batch(pa.table({"value": values}), partition=p).result(30)
                self.sent += self._per_tick
        except BaseException as exc:  # reported by ``stop``
            self.error = exc

    def stop(self) -> None:
        """Stop, flush; raise what the thread met."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(60)
            self._producer.close()
        if self.error is not None:
            raise self.error


def duplicates(records: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """The (partition, offset) pairs handed out more than once."""
    counts = collections.Counter(records)
    return {r for r, n in counts.items() if n > 1}


def gaps(records: Iterable[tuple[int, int]], ends: dict[int, int]) -> dict[int, list[int]]:
    """Per partition, the offsets in ``[0, ends[p])`` nobody handed out (empty: none)."""
    got: dict[int, set[int]] = collections.defaultdict(set)
    for p, o in records:
        got[p].add(o)
    missing = {p: sorted(set(range(end)) - got[p]) for p, end in ends.items()}
    return {p: m for p, m in missing.items() if m}


def read_everything(
    procs: list[MemberProc], fluvio: Fluvio, topic: str, partitions: int
) -> list[Output]:
    """Once produce stopped: wait (bounded) until the members together handed out every
    offset below each partition's high watermark; their outputs then."""
    ends = {p: fluvio.fetch_offsets(topic, p).hw for p in range(partitions)}
    assert all(end > 0 for end in ends.values())
    wait_until(
        lambda: not gaps([r for proc in procs for r in proc.output().records], ends),
        30,
        "the members to read every record",
    )
    return [proc.output() for proc in procs]
