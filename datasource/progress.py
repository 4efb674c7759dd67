"""``progressGroup``: mirror a streaming query's committed offsets into a consumer group.

Spark never joins a group: it assigns partitions itself and its checkpoint is the truth.
The mirror only makes the query's progress visible to group tools (``fluvio
consumer-group describe`` shows its lag, 0 once it caught up), which Kafka's source
refused to do (SPARK-27549). It writes to a progress-only group (``kind: external``),
which its first write creates and which members can never join:

- *Claim* (the reader's first ``latestOffset``, before any batch runs): an empty write
  that creates the group or checks it is one. A group of members is refused there, so the
  query fails at its start with a ``DataSourceOptionError`` naming the group.
- *Mirror*: write the query's committed position as the group's offsets, exactly, even
  below what is stored (a query restarted from an older checkpoint moves the group back:
  the checkpoint rules). Spark calls ``commit(end)`` of batch N only when it plans batch
  N+1, so after the last batch it would never come and the lag would stay above 0 while
  the query idles (the pulsar-spark complaint). So the reader also mirrors the ``start``
  of every ``latestOffset(start)``: Spark asks for it at each trigger, once the previous
  batch is in its commit log, with ``start`` = that batch's end. A write equal to the
  last one is skipped, so a busy query writes once per micro-batch.
- *Never fail the query*: a failed write is logged as a warning and kept pending; it is
  retried at the next trigger, and newer offsets replace it.

The state (group, endpoint, the pending offsets) is plain data, so the reader pickles.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from datasource.clients import with_client
from datasource.offsets import PartitionOffsetMap
from spark_stream.client import Fluvio, TlsConfig
from spark_stream.errors import (
    DataSourceOptionError,
    FluvioError,
    GroupNotEmptyError,
    InvalidRequestError,
)

__all__ = ["ProgressMirror"]

log = logging.getLogger(__name__)


@dataclass
class ProgressMirror:
    """Writes a query's committed position into its progress group (driver side).

    Attributes:
        group: the ``progressGroup`` option.
        endpoint: the reader's ``endpoint`` option (None: resolved as for reads).
        tls: the reader's ``tls.*`` options (None: as for reads).
        token: the reader's ``token`` option (None: resolved as for reads).
        claimed: the group was created or checked.
        pending: offsets still to write (a write failed), or None.
        written: the offsets last written, or None.
    """

    group: str
    endpoint: str | None
    tls: TlsConfig | None = None
    token: str | None = None
    claimed: bool = False
    pending: PartitionOffsetMap | None = None
    written: PartitionOffsetMap | None = None

    def claim(self) -> None:
        """Create the progress group or check it is one (once per reader).

        Raises:
            DataSourceOptionError: the group is a group of members (with members or not).
        """
        if self.claimed:
            return
        try:
            self._write({})
        except (GroupNotEmptyError, InvalidRequestError) as exc:
            raise DataSourceOptionError(f"option 'progressGroup': {exc}") from None
        except FluvioError as exc:  # the SC is away: reads fail on their own, retry later
            log.warning("progressGroup %r: cannot claim the group yet: %s", self.group, exc)
            return
        self.claimed = True

    def mirror(self, offsets: PartitionOffsetMap) -> None:
        """Mirror the query's committed position; a failure only logs a warning.

        ``pending`` is always the newest position not yet written (None: all written).
        """
        self.pending = None if offsets == self.written else dict(offsets)
        self.flush()

    def flush(self) -> None:
        """Write the pending offsets, if any (each trigger retries a failed write)."""
        if self.pending is None:
            return
        try:
            self._write(self.pending)
        except FluvioError as exc:
            log.warning(
                "progressGroup %r: offsets not mirrored (retried at the next trigger; the "
                "query's checkpoint is unaffected): %s",
                self.group,
                exc,
            )
            return
        self.written, self.pending = self.pending, None

    def _write(self, offsets: PartitionOffsetMap) -> None:
        wanted = {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}

        def call(client: Fluvio) -> None:
            reply = client.admin().commit_progress(self.group, wanted)
            if reply.skipped:
                log.info("progressGroup %r: gone, skipped: %s", self.group, reply.skipped)

        with_client(self.endpoint, call, tls=self.tls, token=self.token)
