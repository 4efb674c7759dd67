"""The active-SC lease and its fencing token: the rules, without I/O or a real clock.

Theory of operation. Several SCs share one KV store; one of them, the *active* SC, runs
the controllers and serves; the others stand by. Who is active is a lease in the store:
a record ``(token, holder)`` that expires ``ttl`` seconds after its last renewal.

- ``claim``: a claimant gets the lease when there is no record, when it expired, or when
  the record names the claimant itself (an SC restarted on the same addresses: the old
  process is gone, the ports are its). Each grant takes a new *fencing token*, one more
  than the last issued; the store keeps the last token even after the record expires.
- ``renew``: the holder extends its record. A record that expired while nobody claimed
  (the last token is still the holder's) is simply set again; any other state means the
  lease is lost: another SC holds it, or held it meanwhile.
- tokens only grow: a store whose last token is *below* a holder's lost its data (a
  flushed or new Redis); the holder learns it from a renewal or a fenced write.
- fencing: every KV write of an SC carries its token and is refused unless it equals
  the last token issued. A paused SC that lost its lease therefore cannot write after
  the new one took over, whatever its own clock believes; its first refused write (or
  renewal) makes it step down.

``claim`` and ``renew`` below are the reference the memory store runs and the Redis
script (``sc.kv._lua.CLAIM_LEASE``, ``RENEW_LEASE``) mirrors. ``next_step`` is the
keeper's schedule (``sc.leadership``): when to try to claim, to renew, or to give up.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from spark_stream.errors import InvalidConfigError

__all__ = [
    "LeaseClaim",
    "LeaseConfig",
    "LeaseRecord",
    "Step",
    "StepKind",
    "claim",
    "next_step",
    "renew",
]


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The lease as stored: the token, the holder, and when it expires (store clock)."""

    token: int
    holder: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class LeaseClaim:
    """The answer to a claim or renewal.

    Attributes:
        granted: the caller holds the lease (with ``token``).
        token: the caller's token when granted; else the current holder's, or the last
            issued when nobody holds it (0: none ever).
        holder: the current holder (the caller when granted; "" when nobody holds it).
    """

    granted: bool
    token: int
    holder: str


def claim(
    record: LeaseRecord | None, last_token: int, holder: str, now: float, ttl: float
) -> tuple[LeaseClaim, LeaseRecord | None, int]:
    """A claim of the lease by ``holder`` at ``now``.

    Returns:
        The answer, the record afterwards, and the last token afterwards.
    """
    if record is not None and now < record.expires_at and record.holder != holder:
        return LeaseClaim(False, record.token, record.holder), record, last_token
    token = last_token + 1
    return LeaseClaim(True, token, holder), LeaseRecord(token, holder, now + ttl), token


def renew(
    record: LeaseRecord | None, last_token: int, token: int, holder: str, now: float, ttl: float
) -> tuple[LeaseClaim, LeaseRecord | None]:
    """A renewal by the holder of ``token`` at ``now``.

    Returns:
        The answer (granted: still held) and the record afterwards.
    """
    live = record if record is not None and now < record.expires_at else None
    mine = live is not None and live.token == token and live.holder == holder
    if mine or (live is None and last_token == token):
        return LeaseClaim(True, token, holder), LeaseRecord(token, holder, now + ttl)
    if live is None:  # nobody holds it: the token says who did last
        return LeaseClaim(False, last_token, ""), record
    return LeaseClaim(False, live.token, live.holder), record


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    """How the keeper paces itself.

    Attributes:
        ttl_s: the lease's time to live; a standby takes over at most this long after
            the active SC stopped renewing.
        renew_s: the active SC renews this often (a third of the TTL by default).
        poll_s: a standby tries to claim this often.
    """

    ttl_s: float = 5.0
    renew_s: float | None = None
    poll_s: float = 0.5

    def __post_init__(self) -> None:
        if self.ttl_s <= 0 or self.poll_s <= 0:
            raise InvalidConfigError("lease ttl and poll period must be > 0")
        if self.renew_s is not None and not 0 < self.renew_s < self.ttl_s:
            raise InvalidConfigError("the lease renew period must be > 0 and below its ttl")

    @property
    def renew_every(self) -> float:
        """The renew period in effect."""
        return self.renew_s if self.renew_s is not None else self.ttl_s / 3


class StepKind(StrEnum):
    """What the keeper does next."""

    CLAIM = "claim"
    RENEW = "renew"
    WAIT = "wait"


@dataclass(frozen=True, slots=True)
class Step:
    """The keeper's next step: act now, or wait ``delay`` seconds first."""

    kind: StepKind
    delay: float = 0.0


def next_step(active: bool, last_attempt: float | None, now: float, config: LeaseConfig) -> Step:
    """When the keeper claims (standby) or renews (active) next.

    Args:
        active: this SC holds the lease.
        last_attempt: when the last claim or renewal was sent (None: never).
        now: the keeper's clock.
        config: the periods.
    """
    period = config.renew_every if active else config.poll_s
    act = StepKind.RENEW if active else StepKind.CLAIM
    if last_attempt is None or now >= last_attempt + period:
        return Step(act)
    return Step(StepKind.WAIT, last_attempt + period - now)
