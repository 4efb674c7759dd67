"""The ``./dev`` script's paths: what each command runs, with a stand-in ``.venv``.

A copy of ``dev`` runs in a temporary directory whose ``.venv`` holds logging stand-ins
for python, ruff, mypy and lint-imports (its install stamp is current, so nothing is
installed), with a ``PATH`` of a few core tools and no ``mvn`` (a logging stand-in when asked). The
log shows which steps a command takes; the demo must not fetch the Delta jars, and builds
the JVM connector jar only when Maven is there (it runs without), while ``setup`` and
``test`` (what ``.ci/run`` runs) must do both, and ``test`` also runs the connector's
JUnit tests.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = (
    "bash",
    "sh",
    "cat",
    "sha1sum",
    "cut",
    "dirname",
    "basename",
    "rm",
    "touch",
    "tr",
    "printf",
)
STAND_IN = """#!/bin/sh
printf '%s %s\\n' "$(basename "$0")" "$(printf '%s ' "$@" | tr '\\n' ' ')" >> "$DEV_LOG"
"""

RunDev = Callable[..., tuple[int, list[str]]]
MVN_STAND_IN = "#!/bin/sh\nexit 0\n"


@pytest.fixture
def run_dev(tmp_path: Path) -> RunDev:
    """``run_dev(*args, mvn=False)`` -> (exit code, one log line per program the script
    ran); with ``mvn``, a stand-in ``mvn`` is on ``PATH``."""
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "constraints").mkdir()
    shutil.copy(ROOT / "constraints" / "dev.txt", tmp_path / "constraints" / "dev.txt")
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for name in ("python", "ruff", "mypy", "lint-imports"):
        (venv_bin / name).write_text(STAND_IN)
        (venv_bin / name).chmod(0o755)
    stamped = (tmp_path / "pyproject.toml").read_bytes() + (
        tmp_path / "constraints" / "dev.txt"
    ).read_bytes()
    digest = hashlib.sha1(stamped).hexdigest()[:12]  # as ./dev names its install stamp
    (tmp_path / ".venv" / f".installed-{digest}").touch()
    path = tmp_path / "path"
    path.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is not None:
            (path / tool).symlink_to(found)
    assert shutil.which("mvn", path=str(path)) is None
    log = tmp_path / "dev.log"

    def run(*args: str, mvn: bool = False) -> tuple[int, list[str]]:
        log.write_text("")
        (path / "mvn").unlink(missing_ok=True)
        if mvn:
            (path / "mvn").write_text(MVN_STAND_IN)
            (path / "mvn").chmod(0o755)
        env = {"PATH": str(path), "DEV_LOG": str(log), "HOME": str(tmp_path)}
        done = subprocess.run(
            [str(path / "bash"), str(tmp_path / "dev"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.returncode, [line.strip() for line in log.read_text().splitlines()]

    return run


# (command, does it fetch the Delta jars first, the program it ends with)
COMMANDS = [
    (("demo", "--records", "5"), False, "python -m jobs.demo --records 5"),
    (("bench", "storage"), False, "python -m bench.storage"),
    (("setup",), True, None),
    (("test", "-k", "x"), True, "python -m pytest -k x"),  # what .ci/run runs
]


BUILD_JAR = "python -m datasource.connector_jar build"
JUNIT = "python -m datasource.connector_jar test"


def test_only_setup_and_test_fetch_the_delta_jars(run_dev: RunDev) -> None:
    """The demo and the benchmarks run with no Maven on PATH and no jars cached."""
    for args, fetches, last in COMMANDS:
        code, steps = run_dev(*args)
        assert code == 0, args
        assert not any("pip install" in step for step in steps), (args, steps)  # stamp current
        fetched = bool(steps) and steps[0].startswith("python -c") and "delta_jars()" in steps[0]
        assert fetched == fetches, (args, steps)
        assert (BUILD_JAR in steps) == fetches, (args, steps)
        if last is not None:
            assert steps[-1] == last
    _, steps = run_dev("test")
    programs = [s.split(" ")[0] for s in steps]
    assert programs == [
        "python", "python", "ruff", "ruff", "mypy", "lint-imports", "python", "python"
    ]  # fmt: skip
    assert steps[1] == BUILD_JAR
    assert steps[6] == JUNIT


def test_the_demo_builds_the_connector_jar_when_maven_is_there(run_dev: RunDev) -> None:
    """The demo's session uses the jar when it is built: with Maven the demo builds it
    first (and never fetches the Delta jars); without, it goes straight to the job."""
    code, steps = run_dev("demo", mvn=True)
    assert code == 0
    assert steps == [BUILD_JAR, "python -m jobs.demo"]
    code, steps = run_dev("demo")
    assert code == 0
    assert steps == ["python -m jobs.demo"]
