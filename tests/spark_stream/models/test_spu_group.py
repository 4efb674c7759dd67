"""SPU group model: the seed's YAML, storage size, id range, rejected specs."""

from __future__ import annotations

import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.models import SpuGroup, SpuGroupResolution, SpuGroupSpec, parse_size

SEED = """\
spec:
  replicas: 2
  minId: 11
  template:
    storage:
        size: 20Gi
status:
    resolution: Reserved
"""


def test_seed_yaml_parses_and_round_trips() -> None:
    group = SpuGroup.from_yaml(SEED, name="main")
    assert group.spec.replicas == 2 and group.spec.min_id == 11
    assert group.spec.template.storage.size == "20Gi"
    assert group.spec.template.storage.size_bytes == 20 * 2**30
    assert list(group.spec.spu_ids) == [11, 12]
    assert group.status.resolution is SpuGroupResolution.RESERVED
    text = group.to_yaml()
    assert "minId: 11" in text and "size: 20Gi" in text
    assert SpuGroup.from_yaml(text) == group


def test_storage_size_defaults_to_one_gigabyte() -> None:
    spec = SpuGroupSpec(replicas=1)
    assert spec.template.storage.size == "1Gi"
    assert spec.template.storage.size_bytes == 2**30


@pytest.mark.parametrize(
    ("text", "size"),
    [("1024", 1024), ("1K", 1000), ("1Ki", 1024), ("500Mi", 500 * 2**20), ("2T", 2 * 10**12)],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.replicas"),
        ({"replicas": -1}, "spec.replicas"),
        ({"replicas": 1, "minId": -5}, "spec.minId"),
        ({"replicas": 2, "minId": 2**31 - 1}, "replicas: ids"),
        ({"replicas": 1, "template": {"storage": {"size": "lots"}}}, "template.storage.size"),
        ({"replicas": 1, "template": {"storage": {"size": "0Gi"}}}, "template.storage.size"),
        ({"replicas": 1, "template": {"storage": {"sise": "1Gi"}}}, "template.storage.sise"),
        ({"replicas": 1, "template": {"publicPort": 0}}, "template.publicPort"),
    ],
)
def test_invalid_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field.replace(".", r"\.")):
        SpuGroup.from_dict({"metadata": {"name": "g"}, "spec": spec})
