"""Scrape a Prometheus endpoint over HTTP and look samples up by name and labels."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Samples", "scrape"]


@dataclass(frozen=True)
class Samples:
    """One scrape: every sample as ``(name, labels, value)``."""

    rows: list[tuple[str, dict[str, str], float]]

    def get(self, name: str, **labels: str) -> float | None:
        """The value of the one sample of ``name`` whose labels include ``labels``."""
        found = self.all(name, **labels)
        if len(found) > 1:
            raise AssertionError(f"{name}{labels} matches {len(found)} samples")
        return found[0] if found else None

    def all(self, name: str, **labels: str) -> list[float]:
        """Values of every sample of ``name`` whose labels include ``labels``."""
        return [
            value
            for sample, have, value in self.rows
            if sample == name and all(have.get(k) == v for k, v in labels.items())
        ]

    def names(self) -> set[str]:
        """Every sample name."""
        return {name for name, _, _ in self.rows}


def scrape(url: str, timeout: float = 10.0) -> Samples:
    """GET ``url`` and parse the text exposition format."""
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        text = reply.read().decode()
    rows = [
        (sample.name, dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]
    return Samples(rows)
