"""SPU model: the seed's YAML, defaults, and rejected specs."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.models import (
    Encryption,
    Spu,
    SpuResolution,
    SpuSpec,
    SpuStatus,
    SpuType,
)

SEED_SPEC = """\
spec:
  spuId: 100
  spuType: "Custom"
  rack: "Zone1"
  publicEndpoint:
    port: 9005
    ingress:
      - hostname: localhost
    encryption: TLS
  privateEndpoint:
    port: 9006
    host: localhost
    encryption: TLS
status:
    resolution: online
"""


def test_seed_yaml_parses_and_round_trips() -> None:
    spu = Spu.from_yaml(SEED_SPEC, name="spu-100")
    assert spu.spec.spu_id == 100
    assert spu.spec.spu_type is SpuType.CUSTOM
    assert spu.spec.rack == "Zone1"
    assert spu.spec.public_endpoint.port == 9005
    assert spu.spec.public_endpoint.host == "localhost"
    assert spu.spec.public_endpoint.encryption is Encryption.TLS
    assert spu.spec.private_endpoint.host == "localhost"
    assert spu.status.resolution is SpuResolution.ONLINE
    text = spu.to_yaml()
    assert "spuId: 100" in text and "spuType: Custom" in text and "resolution: Online" in text
    assert Spu.from_yaml(text) == spu


def test_defaults() -> None:
    spec = SpuSpec(spu_id=5)
    assert spec.spu_type is SpuType.CUSTOM
    assert (spec.public_endpoint.port, spec.private_endpoint.port) == (9005, 9006)
    assert spec.public_endpoint.host == "localhost"
    assert SpuStatus().resolution is SpuResolution.INIT


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.spuId"),
        ({"spuId": -1}, "spec.spuId"),
        ({"spuId": 2**31}, "spec.spuId"),
        ({"spuId": "one"}, "spec.spuId"),
        ({"spuId": 1, "spuType": "Cloud"}, "spec.spuType"),
        ({"spuId": 1, "publicEndpoint": {"port": 0}}, "spec.publicEndpoint.port"),
        ({"spuId": 1, "publicEndpoint": {"port": 65536}}, "spec.publicEndpoint.port"),
        ({"spuId": 1, "privateEndpoint": {"port": 70000}}, "spec.privateEndpoint.port"),
        ({"spuId": 1, "publicEndpoint": {"ingress": [{}]}}, "spec.publicEndpoint.ingress.0"),
        ({"spuId": 1, "publicEndpoint": {"encryption": "ROT13"}}, "encryption"),
        ({"spuId": 1, "color": "red"}, "spec.color"),
    ],
)
def test_invalid_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field.replace(".", r"\.")):
        Spu.from_dict({"metadata": {"name": "spu"}, "spec": spec})


def test_bad_status_resolution() -> None:
    with pytest.raises(InvalidConfigError, match="status.resolution"):
        Spu.from_dict(
            {"metadata": {"name": "s"}, "spec": {"spuId": 1}, "status": {"resolution": "Sleeping"}}
        )
