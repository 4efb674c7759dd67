"""Where a follower opening a stream must cut its log to match its leader's.

A follower lists the ``(base offset, crc)`` of its frames past its high watermark; the
longest prefix that matches the leader's log is kept and the rest cut, so a follower
whose log diverged after a leader change truncates exactly what differs. This walk reads
the leader's log (frame headers only) and changes nothing: the leader controller records
the result as the follower's progress.
"""

from __future__ import annotations

from spark_stream.records import read_header
from spu.private_messages import ReplicaOffsets
from spu.storage import ReplicaLog

__all__ = ["sync_point"]


def sync_point(log: ReplicaLog, offsets: ReplicaOffsets) -> tuple[int, bool]:
    """Where a follower with ``offsets`` must cut its log, and whether to reset it.

    The follower keeps everything below ``offsets.start`` (its committed prefix) and
    every following frame whose base offset and crc match ``log``'s; the first
    difference and everything after it go. The cut is always at a frame boundary of
    ``log`` (below ``offsets.start`` when that falls inside one of its frames). A cut
    below the log's start means the follower must empty its log and restart it at the
    log start (``reset``).

    Args:
        log: the leader's log.
        offsets: the follower's replica as it opens its stream.

    Returns:
        ``(offset, reset)``: the follower's LEO after the cut.
    """
    leo, log_start = log.leo, log.log_start_offset
    point = min(offsets.start, leo)
    for base, crc in offsets.tail:
        if base != point or base >= leo or base < log_start:
            break
        piece = log.read(base, 1)
        if piece.base_offset != base:
            break
        header = read_header(piece.data)
        if header.crc != crc:
            break
        point = header.next_offset
    point = min(point, offsets.leo, leo)
    if log_start < point < leo:
        # The follower's start (its HW) is not a frame boundary here: its history
        # below its HW differs from this log's (a deposed leader that committed alone).
        # Cut at the start of this log's frame holding it, so pushes from there append
        # (keeping the follower's point would make every push overlap its log, forever).
        point = min(point, log.read(point, 1).base_offset)
    reset = point < log_start
    if reset:
        point = log_start
    return point, reset
