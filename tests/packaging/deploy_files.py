"""Reading the Dockerfile and the Kubernetes manifests into what a test can run (pure).

The image is not built here (no container runtime in CI): the tests run the image's
command from the wheel installed in a fresh venv, with the image's environment, a
container's environment from the manifests, and the paths inside the image (its data
volume) mapped onto a temporary directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from dockerfile_parse import DockerfileParser


@dataclass(frozen=True)
class ImageRuntime:
    """What the final stage of a Dockerfile gives a container at run time."""

    cmd: list[str]
    entrypoint: list[str]
    env: dict[str, str]
    user: str
    volumes: list[str]
    workdir: str
    exposed: list[int]

    def argv(self, spec: Mapping[str, Any] | None = None) -> list[str]:
        """The process a container of this image runs, by Kubernetes' rules.

        A container's ``command`` replaces ENTRYPOINT (and drops CMD), its ``args``
        replace CMD; without either the image's ENTRYPOINT and CMD run, as ``docker run``.
        """
        spec = spec or {}
        if "command" in spec:
            return [*spec["command"], *spec.get("args", [])]
        return [*self.entrypoint, *spec.get("args", self.cmd)]


def _json_list(value: str) -> list[str]:
    loaded = yaml.safe_load(value)
    if not isinstance(loaded, list):
        raise ValueError(f"use the exec (JSON list) form, got {value!r}")
    return [str(v) for v in loaded]


def image_runtime(dockerfile: Path) -> ImageRuntime:
    """The final stage's CMD, ENTRYPOINT, ENV, USER, VOLUME, WORKDIR and EXPOSE."""
    parser = DockerfileParser(path=str(dockerfile))
    final = [i for i in parser.structure if i["instruction"] == "FROM"][-1]["startline"]
    stage = [i for i in parser.structure if i["startline"] >= final]

    def last(name: str) -> str | None:
        values = [i["value"] for i in stage if i["instruction"] == name]
        return values[-1] if values else None

    volumes: list[str] = []
    for i in stage:
        if i["instruction"] == "VOLUME":
            volumes += _json_list(i["value"])
    exposed = [int(p) for i in stage if i["instruction"] == "EXPOSE" for p in i["value"].split()]
    return ImageRuntime(
        cmd=_json_list(last("CMD") or "[]"),
        entrypoint=_json_list(last("ENTRYPOINT") or "[]"),
        env=dict(parser.envs),  # the final stage's, inherited ones included
        user=last("USER") or "root",
        volumes=volumes,
        workdir=last("WORKDIR") or "/",
        exposed=exposed,
    )


def manifests(directory: Path) -> list[dict[str, Any]]:
    """Every resource of the ``*.yaml`` files that kustomization.yaml lists, in order."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    docs: list[dict[str, Any]] = []
    for name in kustomization["resources"]:
        docs += [d for d in yaml.safe_load_all((directory / name).read_text()) if d]
    return docs


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The resource of ``kind`` named ``name``."""
    for doc in docs:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise KeyError(f"no {kind} {name}")


def container(workload: dict[str, Any], name: str) -> dict[str, Any]:
    """A container of a Deployment's or StatefulSet's pod template."""
    for c in workload["spec"]["template"]["spec"]["containers"]:
        if c["name"] == name:
            return dict(c)
    raise KeyError(f"no container {name}")


def container_env(spec: dict[str, Any], resolved: Mapping[str, str]) -> dict[str, str]:
    """A container's variables: plain values as written, ``valueFrom`` ones from ``resolved``.

    Raises:
        KeyError: a ``valueFrom`` variable that ``resolved`` does not give.
    """
    env: dict[str, str] = {}
    for var in spec.get("env", []):
        env[var["name"]] = var["value"] if "value" in var else resolved[var["name"]]
    return env


def remap(env: Mapping[str, str], prefix: str, onto: Path) -> dict[str, str]:
    """``env`` with values under the image path ``prefix`` moved under ``onto``."""
    out = {}
    for key, value in env.items():
        if value == prefix or value.startswith(prefix.rstrip("/") + "/"):
            value = str(onto / Path(value).relative_to(prefix))
        out[key] = value
    return out
