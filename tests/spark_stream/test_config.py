"""Settings: YAML defaults, environment overrides, typed errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sc.settings import ScSettings
from spark_stream.config import load_settings, packaged_conf, settings_files
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


def test_conf_dir_overrides_only_the_fields_it_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "spu.yaml").write_text("id: 7\nprivate_port: 9116\n")
    monkeypatch.setenv("FLUVIO_CONF_DIR", str(tmp_path))
    spu = load_settings(SpuSettings)
    assert (spu.id, spu.private_port, spu.public_port) == (7, 9116, 9005)
    assert settings_files(SpuSettings)[0] == str(tmp_path / "spu.yaml")


def test_the_packaged_defaults_are_found_in_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUVIO_CONF_DIR", str(tmp_path))  # holds no sc.yaml: packaged only
    (packaged,) = settings_files(ScSettings)
    assert packaged.endswith("spark_stream/conf/sc.yaml")
    assert Path(packaged).is_file()
    assert load_settings(ScSettings).group_session_timeout_ms == 10_000


def test_every_packaged_key_is_a_field() -> None:
    """A packaged default naming no field would fail every start (``extra="forbid"``)."""
    for cls in (ScSettings, SpuSettings):
        keys = yaml.safe_load(packaged_conf(cls.yaml_file).read_text())
        assert set(keys) <= set(cls.model_fields), cls.__name__


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
