"""Settings: YAML defaults, environment overrides, typed errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from sc.settings import ScSettings
from spark_stream.config import load_settings
from spark_stream.errors import InvalidConfigError
from spu.settings import SpuSettings


def test_packaged_yaml_gives_the_documented_ports() -> None:
    sc = load_settings(ScSettings)
    spu = load_settings(SpuSettings)
    assert (sc.public_port, sc.private_port) == (9003, 9004)
    assert (spu.public_port, spu.private_port) == (9005, 9006)


def test_environment_beats_yaml_and_keywords_beat_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLUVIO_SC_PUBLIC_PORT", "9103")
    assert load_settings(ScSettings).public_port == 9103
    assert load_settings(ScSettings, public_port=9203).public_port == 9203


def test_conf_dir_can_be_moved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "spu.yaml").write_text("id: 7\nprivate_port: 9116\n")
    monkeypatch.setenv("FLUVIO_CONF_DIR", str(tmp_path))
    spu = load_settings(SpuSettings)
    assert (spu.id, spu.private_port, spu.public_port) == (7, 9116, 9005)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [({"public_port": 70000}, "public_port"), ({"heartbeat_timeout_s": 0}, "heartbeat_timeout_s")],
)
def test_invalid_values_name_the_field(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidConfigError, match=field):
        load_settings(ScSettings, **overrides)


def test_unknown_yaml_keys_are_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sc.yaml").write_text("public_prot: 1\n")
    monkeypatch.setenv("FLUVIO_CONF_DIR", str(tmp_path))
    with pytest.raises(InvalidConfigError, match="public_prot"):
        load_settings(ScSettings)
