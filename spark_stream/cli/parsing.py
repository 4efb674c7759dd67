"""Pure helpers for CLI arguments: durations, sizes, endpoints, assignment files.

Each returns a value or raises ``InvalidConfigError`` naming the flag, so ``main`` can
print one clear line and exit non-zero; ``duration_arg``/``size_arg`` are argparse
``type=`` converters (a bad value is a usage error, exit 2). Durations and sizes are read
by ``spark_stream.units``, the one parser of both. ``CommandParser`` makes each
(sub)command report its own bad flags.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from spark_stream import units
from spark_stream.errors import InvalidConfigError

__all__ = [
    "CommandParser",
    "parse_duration",
    "tier_url",
    "parse_bytes",
    "duration_arg",
    "size_arg",
    "load_assignment",
    "record_template",
]


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose subcommands report the arguments they do not know.

    Plain argparse hands a subcommand's unknown arguments back up to the top-level
    parser, which then prints the top-level usage (``usage: fluvio [-h] ...``) for
    ``fluvio topic create x --bogus``. Here the parser that met them fails at once with
    its own usage line and exit code 2. Subparsers inherit the class
    (``add_subparsers`` builds them with ``type(self)``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._checks: list[Callable[[argparse.Namespace], str | None]] = []

    def add_check(self, check: Callable[[argparse.Namespace], str | None]) -> None:
        """A rule across arguments (argparse has none): ``check`` returns what is wrong,
        reported with this parser's usage (exit 2), or None."""
        self._checks.append(check)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse ``args``; unknown arguments and broken rules are an error of this parser
        (exit 2)."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        for check in self._checks:
            problem = check(parsed)
            if problem is not None:
                self.error(problem)
        return parsed, extras


def parse_duration(text: str, flag: str) -> int:
    """``"7d"``, ``"12h"``, ``"90m"``, ``"30s"`` or plain seconds, as whole seconds (>= 1).

    Raises:
        InvalidConfigError: not a duration, or under one second.
    """
    seconds = int(units.parse_duration(text, flag))
    if seconds < 1:
        raise InvalidConfigError(f"{flag}: {text!r} is shorter than one second")
    return seconds


def parse_bytes(text: str, flag: str) -> int:
    """``"1Gi"``, ``"500M"``, ``"100MB"``, ``"1024"`` as bytes (> 0).

    Raises:
        InvalidConfigError: not such a quantity, or zero.
    """
    value = units.parse_size(text, flag)
    if value <= 0:
        raise InvalidConfigError(f"{flag}: must be positive")
    return value


def duration_arg(flag: str) -> Callable[[str], float]:
    """An argparse ``type=`` reading ``flag``'s duration (``150ms``, ``2s``) as seconds."""

    def convert(text: str) -> float:
        try:
            return units.parse_duration(text, flag)
        except InvalidConfigError as exc:
            # argparse names the flag itself: "argument --linger: '5x' is not ..."
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from None

    return convert


def size_arg(flag: str) -> Callable[[str], int]:
    """An argparse ``type=`` reading ``flag``'s size (``1Gi``, ``100MB``) as bytes (> 0)."""

    def convert(text: str) -> int:
        try:
            return parse_bytes(text, flag)
        except InvalidConfigError as exc:
            # argparse names the flag itself: "argument --linger: '5x' is not ..."
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from None

    return convert


def load_assignment(path: str) -> list[dict[str, Any]]:
    """Read a manual replica assignment file (JSON or YAML).

    Accepted shapes: a list of ``{partition, replicas}`` rows, or a mapping with one key
    ``partitions`` (Fluvio's file) or ``replicaAssignment`` holding that list; Fluvio's
    ``{id, replicas}`` rows are accepted too.

    Raises:
        InvalidConfigError: unreadable file or wrong shape.
    """
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InvalidConfigError(f"--replica-assignment: cannot read {path}: {exc}") from None
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InvalidConfigError(f"--replica-assignment: {path} is not JSON/YAML") from exc
    if isinstance(doc, dict):
        doc = doc.get("partitions", doc.get("replicaAssignment"))
    if not isinstance(doc, list) or not doc:
        raise InvalidConfigError(
            f"--replica-assignment: {path} must list rows of {{partition, replicas}}"
        )
    rows = []
    for row in doc:
        if not isinstance(row, dict):
            raise InvalidConfigError(f"--replica-assignment: bad row {row!r}")
        partition = row.get("partition", row.get("id"))
        replicas = row.get("replicas")
        if not isinstance(partition, int) or not isinstance(replicas, list):
            raise InvalidConfigError(
                f"--replica-assignment: row {row!r} needs partition and replicas"
            )
        rows.append({"partition": partition, "replicas": replicas})
    return rows


def record_template(text: str) -> str:
    """A ``--format`` template: Fluvio's ``{{key}}`` placeholders or Python's ``{key}``.

    Raises:
        InvalidConfigError: an unknown placeholder.
    """
    template = re.sub(r"\{\{\s*(\w+)\s*\}\}", r"{\1}", text)
    known = {"topic", "offset", "partition", "key", "value", "timestamp", "time"}
    for name in re.findall(r"\{(\w*)\}", template):
        if name not in known:
            raise InvalidConfigError(
                f"--format: unknown field {{{name}}} (known: {', '.join(sorted(known))})"
            )
    return template


def tier_url(text: str) -> str:
    """A ``--tier`` value as the SPUs should see it: a URL as given, a local path made
    absolute (the SPUs do not share the CLI's working directory).

    Raises:
        InvalidConfigError: an empty value.
    """
    if not text.strip():
        raise InvalidConfigError("--tier: give a directory or an fsspec URL (s3://bucket/x)")
    if "://" in text:
        return text
    return str(Path(text).expanduser().resolve())
