"""SPU liveness: silence counted only in time the SC could have heard the SPU.

Theory of operation. The SC drops an SPU silent for ``heartbeat_timeout_s``
(``ConnectionManager.close_expired``), swept by a watchdog every ``sweep_interval_s``.
A heartbeat is only *heard* when the SC's event loop runs: while the loop is blocked (a
large controller batch, a burst of spec writes) or the process is not scheduled (a
loaded machine), heartbeats wait in the sockets, and on the first turn of the loop after
the stall the watchdog may sweep before their handlers run. Without a correction the
SPUs pay for the SC's own stall: all of them are dropped at once, their partitions
re-elected, and the first SPU back leads everything.

The watchdog's own lateness measures the stall: a sweep due ``sweep_interval_s`` after
the previous one that runs later than that (beyond ``tolerance_s``) tells how long the
SC could not run (``sweep_overrun``). That time is not counted as anyone's silence: each
session's last sign of life moves forward by it, never past now (``excuse``). An SPU that
is really gone is still dropped: every on-time sweep, and the interval of every late
one, counts in full, so a constantly stalling SC only detects a dead SPU later, never
not at all.

Pure functions of times in seconds (monotonic clock); no I/O.
"""

from __future__ import annotations

__all__ = ["TOLERANCE_FRACTION", "excuse", "sweep_interval_s", "sweep_overrun"]

TOLERANCE_FRACTION = 0.25
"""Lateness of a sweep, as a fraction of its interval, taken as ordinary timer jitter
(not a stall, nothing excused)."""


def sweep_interval_s(heartbeat_timeout_s: float) -> float:
    """The watchdog's period: a quarter of the timeout, at most one second."""
    return min(1.0, heartbeat_timeout_s / 4)


def sweep_overrun(
    previous: float | None, now: float, interval_s: float, tolerance_s: float | None = None
) -> float:
    """Seconds the SC could not run before this sweep: its lateness past the interval.

    Args:
        previous: when the previous sweep ran (None: this is the first).
        now: when this sweep runs.
        interval_s: the sweeps' period.
        tolerance_s: lateness taken as jitter (default ``TOLERANCE_FRACTION`` of the
            interval); a sweep no later than this excuses nothing.

    Returns:
        ``now - previous - interval_s`` when that is over the tolerance, else 0.
    """
    if previous is None:
        return 0.0
    tolerance = interval_s * TOLERANCE_FRACTION if tolerance_s is None else tolerance_s
    late = now - previous - interval_s
    return late if late > tolerance else 0.0


def excuse(last_seen: float, overrun: float, now: float) -> float:
    """A session's last sign of life with the SC's stall ``overrun`` not counted as
    silence: moved forward by it, never past ``now``."""
    return min(now, last_seen + overrun)
