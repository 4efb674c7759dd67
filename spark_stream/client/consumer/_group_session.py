"""When a group member may no longer hand out records: its view of its own session.

The SC expires a member ``session_timeout`` after the last heartbeat it *received*; a
request the member sent at time ``t`` and the SC answered was received after ``t``, so
the member's grants are safe until at least ``t + session``. A member that was stopped
(SIGSTOP, a long GC or swap pause) past that point may already have been replaced, and
batches it fetched before (queued, or in its socket buffers) would reach the
application after their partition moved: duplicates beyond its uncommitted window. So
before handing out a batch the member asks ``may_have_expired(now)``; if so it confirms
its session with a heartbeat first (or learns it was fenced and drops everything).
Pure: the caller passes the monotonic times (and, for ``heartbeat_pause``, the random
draw).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HEARTBEAT_JITTER", "SessionClock", "heartbeat_pause"]

HEARTBEAT_JITTER = 0.1
"""Heartbeats go out after ``interval x (1 - HEARTBEAT_JITTER x u)`` for a uniform ``u``."""


def heartbeat_pause(interval_s: float, u: float) -> float:
    """Seconds from a heartbeat's reply to the next heartbeat, for ``u`` in [0, 1).

    Members that beat in step stay in step: after a stall at the SC, those it delayed
    would all come back together every interval, queueing behind each other. A random
    shortening of up to a tenth spreads them out within a few beats and never lengthens
    the interval the session timeout was sized for.
    """
    return interval_s * (1.0 - HEARTBEAT_JITTER * u)


@dataclass
class SessionClock:
    """The member's lower bound on its session deadline at the SC.

    Attributes:
        session_s: the group's session timeout.
        margin_s: how long before that bound hand-outs stop (a heartbeat interval).
        confirmed_at: when the last request the SC answered (join, heartbeat) was sent.
    """

    session_s: float
    margin_s: float
    confirmed_at: float

    def confirm(self, sent_at: float) -> None:
        """The SC answered a request sent at ``sent_at``: the session lives until at least
        ``sent_at + session_s``."""
        self.confirmed_at = max(self.confirmed_at, sent_at)

    def may_have_expired(self, now: float) -> bool:
        """True once ``now`` is within ``margin_s`` of the bound (or past it)."""
        return now - self.confirmed_at >= self.session_s - self.margin_s
