"""A wheel of the project installed into a fresh venv without pyspark, as a user gets it.

``wheel_env`` (one per test session) copies the sources a wheel holds to a temporary
directory, builds the wheel there (``pip wheel --no-build-isolation``: the dev venv's
setuptools, no download), creates a venv without pip and installs into it, with this
venv's pip, the wheel (``--no-deps``) and then the core requirements its metadata names
(no extra). Every distribution is constrained to the version this venv holds, so the
fresh venv runs what CI tested; pip takes them from its cache or ``PIP_FIND_LINKS`` when
it has them, else from the index. Nothing of the source tree is on the fresh venv's path:
commands run with ``cwd`` in a temporary directory and without ``PYTHONPATH``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
# What the wheel is built from (pyproject's packages, py-modules and readme).
WHEEL_SOURCES = ("pyproject.toml", "README.md", "pyspark_fluvio.py", "spark_stream", "sc", "spu")
WHEEL_SOURCES += ("datasource", "jobs")
# The connector jar, when built, is package data of datasource/ and goes into the wheel.
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")
# Variables that would point the fresh venv at the source tree or at this venv.
_HIDDEN = (
    "PYTHONPATH",
    "PYSPARK_PYTHON",
    "PYSPARK_DRIVER_PYTHON",
    "FLUVIO_CONF_DIR",
    "VIRTUAL_ENV",
)
_TIMEOUT_S = 300


@dataclass(frozen=True)
class WheelEnv:
    """A fresh venv holding the project's wheel and its core requirements only."""

    root: Path
    wheel: Path

    @property
    def bin(self) -> Path:
        """The venv's scripts: ``python``, ``fluvio``, ``fluvio-sc``, ``fluvio-spu``."""
        return self.root / "bin"

    @property
    def python(self) -> Path:
        """The venv's interpreter."""
        return self.bin / "python"

    def environ(self, home: Path, **extra: str) -> dict[str, str]:
        """An environment for the venv's commands: HOME and profile under ``home``."""
        env = {k: v for k, v in os.environ.items() if k not in _HIDDEN}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["HOME"] = str(home)
        env["FLUVIO_PROFILE"] = str(home / "profile.json")
        env.update(extra)
        return env

    def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` (its first item looked up in the venv's ``bin`` first)."""
        exe = self.bin / argv[0]
        command = [str(exe) if exe.exists() else argv[0], *argv[1:]]
        proc = subprocess.run(
            command,
            cwd=cwd,
            env=dict(env),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc


def _pip(*args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    if proc.returncode != 0:
        raise AssertionError(f"pip {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")


def core_requirements(wheel: Path) -> list[str]:
    """The wheel's ``Requires-Dist`` lines that apply without any extra."""
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(zf.read(name).decode())
    core = []
    for line in metadata.get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            core.append(line)
    return core


def installed_pins() -> list[str]:
    """``name==version`` of every distribution in this venv but the project itself."""
    pins = set()
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and name.lower().replace("_", "-") != "spark-stream":
            pins.add(f"{name}=={dist.version}")
    return sorted(pins)


def build_wheel(dest: Path) -> Path:
    """Build the project's wheel from a copy of its sources; returns the wheel's path."""
    src = dest / "src"
    src.mkdir(parents=True)
    for name in WHEEL_SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=_SKIP)
        else:
            shutil.copy2(path, src / name)
    dist = dest / "dist"
    _pip("wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src))
    (wheel,) = dist.glob("spark_stream-*.whl")
    return wheel


@pytest.fixture(scope="session")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> WheelEnv:
    """The project's wheel in a fresh venv with its core requirements and nothing else."""
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(base)
    root = base / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    python = str(root / "bin" / "python")
    constraints = base / "constraints.txt"
    constraints.write_text("\n".join(installed_pins()) + "\n")
    requirements = base / "core.txt"
    requirements.write_text("\n".join(core_requirements(wheel)) + "\n")
    _pip("--python", python, "install", "--quiet", "--no-deps", str(wheel))
    _pip("--python", python, "install", "--quiet", "-r", str(requirements), "-c", str(constraints))
    return WheelEnv(root=root, wheel=wheel)
