"""The dependency ranges of ``pyproject.toml`` against the versions CI pins and tests.

``pyproject.toml`` holds ranges (what a user's install may resolve to: a Databricks
runtime's own pyspark, a newer pandas); ``constraints/dev.txt`` pins the versions the
project's venv installs (``./dev setup``). Three checks keep them honest: every pin lies
in every range naming it (pure, below), the venv running the tests holds exactly the
pins, and pip's resolver, offline against that venv, resolves the ranges (core and
``[spark]``) with the pins, transitive requirements included (delta-spark's own bound on
pyspark, say).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "constraints" / "dev.txt"


def project_requirements(extras: tuple[str, ...] = ("spark", "dev")) -> list[Requirement]:
    """The core requirements and those of ``extras``, without the project's own name."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    reqs = [Requirement(line) for line in lines]
    return [r for r in reqs if canonicalize_name(r.name) != canonicalize_name(project["name"])]


def pins(text: str) -> dict[str, Version]:
    """``name==version`` lines of a constraints file (comments and blanks skipped)."""
    found: dict[str, Version] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise ValueError(f"not a pin: {raw!r}")
        found[canonicalize_name(name)] = Version(version)
    return found


def outside_ranges(requirements: list[Requirement], pinned: dict[str, Version]) -> list[str]:
    """Each requirement that excludes its pinned version, as ``'req' excludes version``."""
    return [
        f"{req} excludes {pinned[name]}"
        for req in requirements
        if (name := canonicalize_name(req.name)) in pinned
        and not req.specifier.contains(pinned[name], prereleases=True)
    ]


@pytest.mark.parametrize(
    ("requirement", "pin", "outside"),
    [
        ("pyspark>=4.2,<4.3", "pyspark==4.2.0", False),
        ("pyspark>=4.2,<4.3", "pyspark==4.2.1", False),
        ("pyspark>=4.2,<4.3", "pyspark==4.1.1", True),
        ("pyspark>=4.2,<4.3", "pyspark==4.3.0", True),
        ("delta-spark>=4.4,<4.5", "delta_spark==4.4.1", False),  # names are normalised
        ("pandas>=2.2,<3", "numpy==2.4.6", False),  # a pin no requirement names
    ],
)
def test_outside_ranges(requirement: str, pin: str, outside: bool) -> None:
    assert bool(outside_ranges([Requirement(requirement)], pins(pin))) is outside


def test_every_pin_lies_in_the_ranges() -> None:
    pinned = pins(CONSTRAINTS.read_text())
    assert {"pyspark", "delta-spark"} <= set(pinned)
    assert outside_ranges(project_requirements(), pinned) == []


def test_the_venv_holds_the_pinned_versions() -> None:
    pinned = pins(CONSTRAINTS.read_text())
    held = {name: Version(importlib.metadata.version(name)) for name in pinned}
    assert held == pinned, "run ./dev setup: the venv is not what constraints/dev.txt pins"


def test_pip_resolves_the_ranges_with_the_pins(tmp_path: Path) -> None:
    """pip's resolver, with no index: only the venv's distributions can satisfy the ranges."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(str(r) for r in project_requirements(("spark",))) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--quiet"]
        + ["-r", str(requirements), "-c", str(CONSTRAINTS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
