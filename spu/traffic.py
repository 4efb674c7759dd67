"""Per-partition traffic totals: what producers appended and consumers fetched.

Plain integers bumped once per produce request or per fetch reply (never per record),
read by the metrics collector when Prometheus scrapes (``spu.metrics``). They live in
the dispatcher by partition name, so they outlast a leader controller (a leadership
that moves away and back keeps counting) for the life of the process.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PartitionTraffic"]


@dataclass(slots=True)
class PartitionTraffic:
    """Totals of one partition on this SPU since the process started."""

    produced_bytes: int = 0
    produced_records: int = 0
    fetched_bytes: int = 0
    fetched_records: int = 0

    def produced(self, nbytes: int, records: int) -> None:
        """Count one produce request's appended frames."""
        self.produced_bytes += nbytes
        self.produced_records += records

    def fetched(self, nbytes: int, records: int) -> None:
        """Count one fetch reply (or stream push) of ``records`` in ``nbytes``."""
        self.fetched_bytes += nbytes
        self.fetched_records += records
