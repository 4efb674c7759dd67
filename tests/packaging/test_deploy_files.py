"""The deployment files: the Dockerfile's runtime and the Kubernetes manifests' schemas.

The manifests are validated with ``kubernetes-validate`` (the API server's OpenAPI
schemas, shipped in the package, strict: an unknown or misspelt field fails) for the
oldest and the newest Kubernetes minor we claim in docs/deploy.md.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest

from tests.packaging.deploy_files import (
    ImageRuntime,
    container,
    container_env,
    find,
    image_runtime,
    manifests,
    remap,
)

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
KUBERNETES_VERSIONS = ("1.30.0", "1.34.0")


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_passes_the_strict_schema(version: str) -> None:
    docs = manifests(K8S)
    assert len(docs) == 6
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_misspelt_field_fails_the_schema() -> None:
    sc = find(manifests(K8S), "Deployment", "fluvio-sc")
    sc["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    with pytest.raises(kubernetes_validate.ValidationError, match="volumeMount"):
        kubernetes_validate.validate(sc, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_pieces_the_guide_relies_on() -> None:
    docs = manifests(K8S)
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert kinds == {
        ("Service", "fluvio-redis"),
        ("StatefulSet", "fluvio-redis"),
        ("Service", "fluvio-sc"),
        ("Deployment", "fluvio-sc"),
        ("Service", "fluvio-spu"),
        ("StatefulSet", "fluvio-spu"),
    }
    redis = find(docs, "StatefulSet", "fluvio-redis")
    script = " ".join(container(redis, "redis")["args"])
    assert "--appendonly" in script and "requirepass" in script  # Redis wants a password
    secret_refs = [
        var["valueFrom"]["secretKeyRef"]["name"]
        for var in container(redis, "redis")["env"]
        if "valueFrom" in var
    ]
    assert set(secret_refs) == {"fluvio-redis-password"}
    sc = find(docs, "Deployment", "fluvio-sc")
    (password,) = [
        v for v in sc["spec"]["template"]["spec"]["volumes"] if "secret" in v
    ]  # the SC reads the same secret from a file
    assert password["secret"]["secretName"] == "fluvio-redis-password"
    assert "FLUVIO_SC_REDIS_PASSWORD_FILE" in {v["name"] for v in container(sc, "sc")["env"]}
    spus = find(docs, "StatefulSet", "fluvio-spu")
    assert spus["spec"]["serviceName"] == "fluvio-spu"
    assert find(docs, "Service", "fluvio-spu")["spec"]["clusterIP"] == "None"
    for workload in (redis, spus):  # persistence: a claim per pod, mounted
        (claim,) = workload["spec"]["volumeClaimTemplates"]
        mounts = workload["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        assert claim["metadata"]["name"] in {m["name"] for m in mounts}
    image = image_runtime(REPO / "Dockerfile")
    for name, kind, cname in (
        ("fluvio-sc", "Deployment", "sc"),
        ("fluvio-spu", "StatefulSet", "spu"),
    ):
        workload = find(docs, kind, name)
        spec = workload["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        ports = {p["containerPort"] for p in container(workload, cname)["ports"]}
        assert ports <= set(image.exposed)
        mounts = {m["mountPath"] for m in container(workload, cname)["volumeMounts"]}
        assert set(image.volumes) <= mounts


def test_the_image_runs_the_sc_as_a_user_with_a_data_volume() -> None:
    image = image_runtime(REPO / "Dockerfile")
    assert image.argv() == ["fluvio-sc"]
    assert image.user.split(":")[0] not in ("root", "0")
    assert image.volumes == ["/data"] and image.workdir == "/data"
    assert image.env["FLUVIO_SC_DATA_DIR"].startswith("/data/")
    assert image.env["FLUVIO_SPU_DATA_DIR"].startswith("/data/")


@pytest.mark.parametrize(
    ("spec", "argv"),
    [
        ({}, ["tini", "--", "fluvio-sc"]),
        ({"args": ["fluvio-spu"]}, ["tini", "--", "fluvio-spu"]),
        ({"command": ["sh", "-c"]}, ["sh", "-c"]),  # CMD is dropped with a command
        ({"command": ["sh", "-c"], "args": ["exec x"]}, ["sh", "-c", "exec x"]),
    ],
)
def test_kubernetes_command_rules(spec: dict[str, list[str]], argv: list[str]) -> None:
    image = ImageRuntime(
        cmd=["fluvio-sc"], entrypoint=["tini", "--"], env={}, user="1", volumes=[], workdir="/",
        exposed=[],
    )  # fmt: skip
    assert image.argv(spec) == argv


def test_container_env_and_remap() -> None:
    spec = {"env": [{"name": "A", "value": "/data/x"}, {"name": "B", "valueFrom": {}}]}
    env = container_env(spec, {"B": "b"})
    assert env == {"A": "/data/x", "B": "b"}
    assert remap(env, "/data", Path("/tmp/t")) == {"A": "/tmp/t/x", "B": "b"}
    assert remap({"C": "/database"}, "/data", Path("/tmp/t")) == {"C": "/database"}
    with pytest.raises(KeyError):
        container_env(spec, {})
