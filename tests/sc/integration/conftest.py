"""The SC as a real subprocess (``python -m sc``) against a real Redis.

``sc_factory`` hands a test as many ``ScChild``\\ ren (``tests.harness.processes``) as it
needs, on the test's Redis by default, and stops whatever is still running at the end.
An ``ScChild`` starts the SC on loopback with a ready file, waits (bounded) until it
listens, and stops it by pid: SIGTERM (``stop``: clean) or SIGKILL (``kill``: a crash).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.harness.processes import ScChild


@pytest.fixture
def sc_factory(redis_url: str, tmp_path: Path) -> Iterator[type[ScChild]]:
    """Make ``ScChild``es (keyword arguments only); every one is stopped at the end.

    The keywords: ``redis_url`` (default: the test's Redis), ``workdir`` (default: a
    fresh folder of ``tmp_path``), ``heartbeat`` (the SC's heartbeat timeout, default
    1.5 s), ``ports`` (fixed (public, private), kept across restarts; default free ones)
    and ``spu_command`` (argv template of managed SPUs).
    """
    made: list[ScChild] = []
    default_url = redis_url

    class Factory(ScChild):
        def __init__(
            self,
            *,
            redis_url: str = default_url,
            workdir: Path | None = None,
            heartbeat: float = 1.5,
            ports: tuple[int, int] = (0, 0),
            spu_command: Sequence[str] | None = None,
        ) -> None:
            super().__init__(
                redis_url,
                workdir or tmp_path / f"sc{len(made)}",
                heartbeat_timeout_s=heartbeat,
                ports=ports,
                spu_command=spu_command,
            )
            made.append(self)

    try:
        yield Factory
    finally:
        for sc in made:
            sc.stop()
