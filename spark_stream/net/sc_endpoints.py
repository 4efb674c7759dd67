"""Several SC endpoints, and the active one a standby names: which SC to talk to next.

Theory of operation. A cluster may run standby SCs beside the active one (``sc.lease``).
Clients and SPUs are given every SC's address, comma separated (``"h1:9003,h2:9003"``);
``ScEndpoints`` keeps that list and a cursor. A standby answers every request with
``NotActiveError`` whose message names the active SC's public and private addresses
(``not_active`` writes it, ``active_from`` reads it); the caller ``follow``s the named
address (public or private, whichever port it speaks to), so the next attempt goes
straight there. A failed connection moves the cursor to the next address (``advance``).
No sockets here: the caller does the connecting (``open_first`` takes its opener).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from spark_stream.errors import ConnectionClosedError, InvalidConfigError, NotActiveError
from spark_stream.net.endpoint import Endpoint, parse_endpoint

__all__ = ["ActiveSc", "ScEndpoints", "active_from", "not_active", "parse_endpoints"]

_T = TypeVar("_T")
_ACTIVE = re.compile(r"active SC: public=(\S+) private=(\S+)")


@dataclass(frozen=True, slots=True)
class ActiveSc:
    """An SC's addresses, as its lease names it (holder string ``{public},{private}``)."""

    public: str
    private: str

    def holder(self) -> str:
        """The holder string stored in the lease."""
        return f"{self.public},{self.private}"

    @classmethod
    def parse(cls, holder: str) -> ActiveSc | None:
        """The addresses in a holder string; None when it is empty or malformed."""
        public, sep, private = holder.partition(",")
        if not sep:
            return None
        try:
            return cls(str(parse_endpoint(public)), str(parse_endpoint(private)))
        except InvalidConfigError:
            return None


def not_active(active: ActiveSc | None) -> NotActiveError:
    """The error a standby answers with, naming the active SC when it knows one."""
    if active is None:
        return NotActiveError("this SC is a standby; no active SC is known yet")
    return NotActiveError(
        f"this SC is a standby; active SC: public={active.public} private={active.private}"
    )


def active_from(error: BaseException) -> ActiveSc | None:
    """The active SC a ``NotActiveError`` names (None: another error, or none named)."""
    if not isinstance(error, NotActiveError):
        return None
    found = _ACTIVE.search(str(error))
    return ActiveSc.parse(f"{found[1]},{found[2]}") if found else None


def parse_endpoints(text: str, *, what: str = "endpoint") -> tuple[Endpoint, ...]:
    """A comma-separated list of ``host:port`` (at least one; duplicates dropped).

    Raises:
        InvalidConfigError: an empty list or a malformed entry (naming ``what``).
    """
    out: list[Endpoint] = []
    for part in text.split(","):
        if part.strip():
            endpoint = parse_endpoint(part, what=what)
            if endpoint not in out:
                out.append(endpoint)
    if not out:
        raise InvalidConfigError(f"{what} names no endpoint: {text!r}")
    return tuple(out)


class ScEndpoints:
    """The SC addresses to try, in order, and which one is current.

    Args:
        endpoints: the configured addresses (``parse_endpoints``), at least one.
        private: these are private (SPU) addresses, so ``follow`` takes the active
            SC's private address; else its public one.
    """

    def __init__(self, endpoints: tuple[Endpoint, ...], *, private: bool = False) -> None:
        if not endpoints:
            raise InvalidConfigError("no SC endpoint")
        self._endpoints = list(endpoints)
        self._private = private
        self._cursor = 0

    @classmethod
    def parse(cls, text: str, *, private: bool = False, what: str = "endpoint") -> ScEndpoints:
        """From a comma-separated list (see ``parse_endpoints``)."""
        return cls(parse_endpoints(text, what=what), private=private)

    @property
    def current(self) -> Endpoint:
        """The address to try now."""
        return self._endpoints[self._cursor]

    @property
    def all(self) -> tuple[Endpoint, ...]:
        """Every known address (the configured ones, then those learned)."""
        return tuple(self._endpoints)

    def advance(self) -> Endpoint:
        """The current address failed: move to the next one (wrapping) and return it."""
        self._cursor = (self._cursor + 1) % len(self._endpoints)
        return self.current

    async def open_first(self, open_one: Callable[[Endpoint], Awaitable[_T]]) -> _T:
        """``open_one`` on each address in turn from the current one: the first to connect.

        Raises:
            ConnectionClosedError: the last address's, when none connects.
        """
        for attempt in range(len(self._endpoints)):
            try:
                return await open_one(self.current)
            except ConnectionClosedError:
                if attempt + 1 == len(self._endpoints):
                    raise
                self.advance()
        raise ConnectionClosedError("no SC endpoint")  # pragma: no cover - returns or raises

    def follow(self, error: BaseException) -> bool:
        """Make the active SC that ``error`` names current (learning a new address).

        Returns:
            True when the error named an active SC (the caller retries at once);
            False otherwise (the cursor does not move).
        """
        active = active_from(error)
        if active is None:
            return False
        target = parse_endpoint(active.private if self._private else active.public)
        if target not in self._endpoints:
            self._endpoints.append(target)
        self._cursor = self._endpoints.index(target)
        return True
