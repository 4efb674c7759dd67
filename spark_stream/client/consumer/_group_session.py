"""When a group member may no longer hand out records: its view of its own session.

The SC expires a member ``session_timeout`` after the last heartbeat it *received*; a
request the member sent at time ``t`` and the SC answered was received after ``t``, so
the member's grants are safe until at least ``t + session``. A member that was stopped
(SIGSTOP, a long GC or swap pause) past that point may already have been replaced, and
batches it fetched before (queued, or in its socket buffers) would reach the
application after their partition moved: duplicates beyond its uncommitted window. So
before handing out a batch the member asks ``may_have_expired(now)``; if so it confirms
its session with a heartbeat first (or learns it was fenced and drops everything).
Pure: the caller passes the monotonic times.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SessionClock"]


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
