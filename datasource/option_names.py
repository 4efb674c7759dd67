"""The names of ``format("fluvio")``'s options: canonical names, Kafka's aliases, and the
check that turns Spark's case-insensitive map into one value per canonical name.

Spark passes options with the case the user typed (or lower-cased); every name here is
matched without case. A name Spark's Kafka source uses for the same meaning is an alias
(``subscribe`` for ``topics``): its value lands under the canonical name, and the
spelling the user gave is kept so that messages name what the user wrote. Both
spellings of one option with different values are an error naming both. A name that is
neither known nor an alias fails with the nearest known name as a suggestion, chosen by
``difflib.get_close_matches`` over the lower-cased names (the JVM connector's
``OptionNames`` computes the same ratio, so both sides suggest the same name). Pure.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from spark_stream.errors import DataSourceOptionError

__all__ = ["READER_ALIASES", "WRITER_ALIASES", "GivenOptions", "canonical_options", "suggest"]

READER_ALIASES: dict[str, str] = {
    "subscribe": "topics",
    "subscribePattern": "topicPattern",
    "kafka.bootstrap.servers": "endpoint",
    "kafka.isolation.level": "isolation",
}
"""Spark's Kafka source names (alias -> canonical) a read accepts with the same meaning."""

WRITER_ALIASES: dict[str, str] = {"kafka.bootstrap.servers": "endpoint"}
"""Spark's Kafka sink names (alias -> canonical) a write accepts with the same meaning."""

SPARK_OWNED = ("checkpointLocation",)
"""Options Spark itself reads from the same map; accepted and ignored here."""


@dataclass(frozen=True)
class GivenOptions:
    """Options by canonical name, and the name the user spelled each one with.

    Attributes:
        values: canonical name -> value.
        spelled: canonical name -> the name given (canonical or alias, in its canonical
            case), for messages.
    """

    values: dict[str, str] = field(default_factory=dict)
    spelled: dict[str, str] = field(default_factory=dict)

    def name(self, canonical: str) -> str:
        """The name the user gave for ``canonical`` (``canonical`` when absent)."""
        return self.spelled.get(canonical, canonical)


def suggest(key: str, names: Iterable[str]) -> str | None:
    """The known name nearest to ``key`` (case ignored), or None when none is near.

    ``difflib.get_close_matches(key, names, n=1, cutoff=0.6)`` on lower-cased names: the
    best ratio wins, a tie goes to the name that sorts last (as ``heapq.nlargest`` picks).
    """
    by_lower = {name.lower(): name for name in names}
    found = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None


def canonical_options(
    options: Mapping[str, str], known: Iterable[str], aliases: Mapping[str, str]
) -> GivenOptions:
    """Map option keys (any case) to canonical names; reject unknown and clashing ones.

    Raises:
        DataSourceOptionError: an unknown name (with the nearest known one when there is
            one), or two spellings of one option with different values.
    """
    known = tuple(known)
    by_lower = {name.lower(): (name, name) for name in known}
    by_lower.update({alias.lower(): (canonical, alias) for alias, canonical in aliases.items()})
    spark_owned = {name.lower() for name in SPARK_OWNED}
    out = GivenOptions()
    for key, value in options.items():
        found = by_lower.get(key.lower())
        if found is None:
            if key.lower() in spark_owned:
                continue
            raise DataSourceOptionError(_unknown(key, (*known, *aliases)))
        name, spelled = found
        if name in out.values and out.values[name] != str(value):
            first, second = sorted((out.spelled[name], spelled), key=lambda n: n != name)
            raise DataSourceOptionError(
                f"options '{first}' and '{second}' name one option with different values: give one"
            )
        if name not in out.values or spelled == name:
            out.spelled[name] = spelled
        out.values[name] = str(value)
    return out


def _unknown(key: str, names: tuple[str, ...]) -> str:
    hint = " (name the topic with option('topic', ...))" if key.lower() == "path" else ""
    near = None if hint else suggest(key, names)
    if near is not None:
        return f"unknown option '{key}' for format('fluvio'); did you mean '{near}'?"
    return (
        f"unknown option '{key}' for format('fluvio'){hint}; known options: "
        f"{', '.join(sorted(names))}"
    )
